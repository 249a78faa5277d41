// The static shape algebra, at compile time only: if this file compiles, the rules hold.
// static + static stays static; static + dyn keeps what is static and makes the rest dyn.
#include <tinygrad.hpp>

namespace {
using namespace tinygrad;
namespace st = tinygrad::detail::st;
template <int64_t... E> using F = static_tensor<float, E...>;
template <class X> using S = typename X::shape_type;
template <class X, class Sh> constexpr bool is = std::is_same_v<S<X>, Sh>;
template <size_t N> using D = st::dims<N>;
template <class X> X val();  // only in decltype

// ---- broadcasting ----
static_assert(is<decltype(val<F<2, 3>>() + val<F<3>>()), shape<2, 3>>);
static_assert(is<decltype(val<F<2, 1>>() * val<F<1, 5>>()), shape<2, 5>>);
static_assert(is<decltype(val<F<4, 1, 3>>() - val<F<2, 1>>()), shape<4, 2, 3>>);
static_assert(st::broadcast(D<2>{2, dyn}, D<2>{3, dyn}).code == 1);    // static extents are checked next to dyn ones
static_assert(st::broadcast(D<2>{2, dyn}, D<1>{3}).out == D<2>{2, 3});
static_assert(st::broadcast(D<2>{dyn, 3}, D<1>{3}).out == D<2>{dyn, 3});
static_assert(st::broadcast(D<1>{dyn}, D<1>{5}).out == D<1>{5});        // dyn meets 5: 5 (dyn must be 1 or 5 at run time)
static_assert(st::broadcast(D<1>{dyn}, D<1>{1}).out == D<1>{dyn});
static_assert(st::broadcast(D<1>{dyn}, D<1>{dyn}).out == D<1>{dyn});
static_assert(st::broadcast(D<2>{2, 3}, D<1>{4}).code == 1);
static_assert(st::broadcast(D<0>{}, D<2>{2, 3}).out == D<2>{2, 3});    // a scalar broadcasts to anything
static_assert(is<decltype(val<F<dyn, 3>>() + 1.0f), shape<-1, 3>>);
static_assert(is<decltype(2.0f * val<F<2, 3>>()), shape<2, 3>>);

// ---- dtypes ----
static_assert(decltype(val<F<2>>() + val<static_tensor<int32_t, 2>>())::dtype == DType::Float32);
static_assert(decltype(val<static_tensor<int32_t, 2>>() * 2.5)::dtype == DType::Float32);   // a float literal makes an int tensor float
static_assert(decltype(val<static_tensor<int32_t, 2>>() * 2)::dtype == DType::Int32);
static_assert(decltype(val<static_tensor<bool, 2>>() + 1)::dtype == DType::Int32);
static_assert(decltype(val<static_tensor<half_t, 2>>() * 2.0)::dtype == DType::Float16);
static_assert(decltype(val<F<2>>() < val<F<2>>())::dtype == DType::Bool);
static_assert(decltype(val<static_tensor<int8_t, 2>>().sum<>())::dtype == DType::Int64);  // as torch
static_assert(decltype(val<static_tensor<int32_t, 2>>().exp())::dtype == DType::Float32);
static_assert(decltype(val<static_tensor<int32_t, 2>>() / val<static_tensor<int32_t, 2>>())::dtype == DType::Float32);
static_assert(decltype(val<F<2>>().cast<int64_t>())::dtype == DType::Int64);

// ---- reductions ----
static_assert(is<decltype(val<F<2, 3, 4>>().sum<1>()), shape<2, 4>>);
static_assert(is<decltype(val<F<2, 3, 4>>().sum<-1, 0>()), shape<3>>);
static_assert(is<decltype(val<F<2, 3, 4>>().sum<>()), shape<>>);
static_assert(is<decltype(val<F<2, 3, 4>>().max_keepdim<1>()), shape<2, 1, 4>>);
static_assert(is<decltype(val<F<dyn, 10>>().mean<0>()), shape<10>>);
static_assert(is<decltype(val<F<dyn, 10>>().softmax()), shape<-1, 10>>);
static_assert(st::reduce<false, 1>(D<2>{2, 3}, std::array<int64_t, 1>{2}).code == 1);
static_assert(is<decltype(val<F<2, 3, 4>>().argmax<1>()), shape<2, 4>>);
static_assert(is<decltype(val<F<dyn, 10>>().argmin<-1>()), shape<-1>>);
static_assert(is<decltype(val<F<2, 3, 4>>().argmax()), shape<>>);                 // no axis: of the flattened tensor
static_assert(decltype(val<F<dyn, 10>>().argmax<1>())::dtype == DType::Int64);

// ---- movement ----
static_assert(is<decltype(val<F<2, 3>>().reshape<3, 2>()), shape<3, 2>>);
static_assert(is<decltype(val<F<4, 6>>().reshape<dyn, 3>()), shape<8, 3>>);        // dyn in the target of a static tensor: inferred, static
static_assert(is<decltype(val<F<dyn, 6>>().reshape<dyn, 2, 3>()), shape<-1, 2, 3>>);
static_assert(st::reshape<2>(D<2>{2, 3}, D<2>{4, 2}).code == 1);
static_assert(st::reshape<2>(D<2>{dyn, 6}, D<2>{dyn, dyn}).code == 3);
static_assert(st::reshape<2>(D<2>{dyn, 6}, D<2>{4, 5}).code == 1);            // 20 is not a multiple of 6
static_assert(is<decltype(val<F<dyn, 1, 28, 28>>().flatten<1>()), shape<-1, 784>>);
static_assert(is<decltype(val<F<2, dyn, 4>>().flatten<0>()), shape<-1>>);
static_assert(is<decltype(val<F<2, 3, 4>>().permute<2, 0, 1>()), shape<4, 2, 3>>);
static_assert(is<decltype(val<F<2, 3, 4>>().T()), shape<2, 4, 3>>);
static_assert(is<decltype(val<F<2, 3, 4>>().transpose<0, 2>()), shape<4, 3, 2>>);
static_assert(st::permute(D<3>{2, 3, 4}, std::array<int64_t, 3>{0, 0, 1}).code == 3);
static_assert(is<decltype(val<F<1, 3>>().expand<4, 3>()), shape<4, 3>>);
static_assert(is<decltype(val<F<3>>().expand<2, dyn>()), shape<2, 3>>);           // dyn in an expand target keeps the extent
static_assert(is<decltype(val<F<2, 3>>().pad<1, 1, 0, 2>()), shape<4, 5>>);
static_assert(is<decltype(val<F<dyn, 3>>().pad<1, 1, 0, 2>()), shape<-1, 5>>);
static_assert(is<decltype(val<F<4, 5>>().shrink<1, 3, 0, 5>()), shape<2, 5>>);
static_assert(is<decltype(val<F<dyn, 5>>().shrink<1, 3, 0, 5>()), shape<2, 5>>);   // a static range of a dyn extent: static
static_assert(is<decltype(val<F<4, 5>>().slice<-1, 1, 4>()), shape<4, 3>>);
static_assert(is<decltype(val<F<4, 5>>().flip<0, 1>()), shape<4, 5>>);
static_assert(is<decltype(cat<0>(val<F<2, 3>>(), val<F<4, 3>>())), shape<6, 3>>);
static_assert(is<decltype(cat<1>(val<F<2, 3>>(), val<F<dyn, 4>>())), shape<2, 7>>);
static_assert(is<decltype(cat<0>(val<F<2, 3>>(), val<F<dyn, 3>>())), shape<-1, 3>>);

// ---- processing ----
static_assert(is<decltype(val<F<64, 784>>().matmul(val<F<784, 10>>())), shape<64, 10>>);
static_assert(is<decltype(val<F<dyn, 784>>().matmul(val<F<784, 10>>())), shape<-1, 10>>);
static_assert(is<decltype(val<F<5, 2, 3>>().matmul(val<F<3, 4>>())), shape<5, 2, 4>>);
static_assert(is<decltype(val<F<3>>().matmul(val<F<3, 4>>())), shape<4>>);
static_assert(is<decltype(val<F<2, 3>>().matmul(val<F<3>>())), shape<2>>);
static_assert(is<decltype(val<F<3>>().matmul(val<F<3>>())), shape<>>);
static_assert(st::matmul(D<2>{64, 784}, D<2>{100, 10}).code == 2);
static_assert(st::matmul(D<3>{2, 3, 4}, D<3>{5, 4, 6}).code == 3);
static_assert(is<decltype(conv2d(val<F<8, 1, 28, 28>>(), val<F<32, 1, 5, 5>>())), shape<8, 32, 24, 24>>);
static_assert(is<decltype(conv2d<2, 1>(val<F<dyn, 3, 32, 32>>(), val<F<16, 3, 3, 3>>())), shape<-1, 16, 16, 16>>);
static_assert(is<decltype(conv2d<1, 0, 1, 2>(val<F<1, 4, 8, 8>>(), val<F<6, 2, 3, 3>>())), shape<1, 6, 6, 6>>);
static_assert(is<decltype(conv2d(val<F<1, 1, dyn, 8>>(), val<F<2, 1, 3, 3>>())), shape<1, 2, -1, 6>>);
static_assert(is<decltype(max_pool2d(val<F<dyn, 32, 24, 24>>())), shape<-1, 32, 12, 12>>);
static_assert(is<decltype(avg_pool2d<3, 1>(val<F<1, 5, 5>>())), shape<1, 3, 3>>);
static_assert(is<decltype(sparse_categorical_crossentropy(val<F<dyn, 10>>(), val<static_tensor<int32_t, dyn>>())), shape<>>);
static_assert(is<decltype(binary_crossentropy(val<F<dyn, 3>>(), val<F<4, 3>>())), shape<>>);
static_assert(is<decltype(binary_crossentropy_logits(val<F<4, 3>>(), val<F<4, 3>>())), shape<>>);
static_assert(st::same(D<2>{4, 3}, D<2>{4, 2}).code == 1 && st::same(D<2>{4, 3}, D<1>{3}).code == 1);  // no broadcasting in a loss
static_assert(is<decltype(cross_entropy(val<F<dyn, 10>>(), val<F<dyn, 10>>())), shape<>>);
static_assert(is<decltype(cross_entropy(val<F<dyn, 10>>(), val<static_tensor<int32_t, dyn>>())), shape<>>);
static_assert(is<decltype(nll_loss(val<F<dyn, 10>>(), val<static_tensor<int32_t, dyn>>())), shape<>>);
static_assert(decltype(cross_entropy(val<static_tensor<double, 4, 10>>(), val<static_tensor<int32_t, 4>>()))::dtype == DType::Float64);
static_assert(st::class_target(D<2>{8, 10}, D<1>{6}, false).code == 3);             // labels: the batch differs
static_assert(st::class_target(D<2>{8, 10}, D<2>{8, 10}, false).code == 1);         // nll_loss takes no probabilities
static_assert(st::class_target(D<2>{8, 10}, D<2>{8, 9}, true).code == 2);
static_assert(st::class_target(D<4>{dyn, 5, 3, 3}, D<3>{2, 3, 3}, false).code == 0); // (N, C, H, W) with labels (N, H, W)
static_assert(st::class_target(D<1>{5}, D<0>{}, false).code == 0);                   // (C) with one label
static_assert(st::class_target(D<0>{}, D<0>{}, true).code == 1);

// ---- layers ----
static_assert(static_nn::Linear<784, 128>::fits<shape<-1, 784>>() && !static_nn::Linear<784, 128>::fits<shape<-1, 100>>());
static_assert(is<decltype(static_nn::seq(static_nn::Conv2d<1, 8, 3>{}, static_nn::relu, static_nn::MaxPool2d<2>{}, static_nn::Flatten<>{},
                                         static_nn::Linear<8 * 13 * 13, 10>{})(val<F<dyn, 1, 28, 28>>())),
                 shape<-1, 10>>);
}  // namespace
