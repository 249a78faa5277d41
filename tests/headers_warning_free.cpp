// PASS
// tests/CMakeLists.txt: test headers_warning_free.<compiler> compiles this file with -Wall -Wextra -Wpedantic
// -Wshadow -Wconversion -Werror. It includes the library and uses a little of each layer, so that templates
// (static shapes, nn layers, optimizers, readers) are instantiated and checked too.
#include <tinygrad.hpp>

using namespace tinygrad;

int main() {
  Tensor x = Tensor::randn({4, 8}), w = Tensor::rand({8, 3}).requires_grad_();
  Tensor y = (x.matmul(w) + 1.0).relu().log_softmax(-1).sum();
  y.backward();
  auto v = y.to_vector<float>();
  nn::Linear lin(8, 3);
  nn::Conv2d conv(1, 2, 3);
  nn::BatchNorm bn(2);
  nn::optim::Adam opt(nn::get_parameters(lin));
  Tensor img = Tensor::rand({1, 1, 6, 6});
  Tensor z = bn(conv(img)).max_pool2d().flatten(1).sum() + lin(x).sum();
  z.backward();
  opt.step();
  nn::optim::OneCycleLR sched(opt, 0.01, 10);
  sched.step();
  nn::eval(bn);
  nn::train(lin, std::nullopt);
  Tensor ce = lin(x).cross_entropy(Tensor::zeros({4}, DType::Int32), Tensor::ones({3}), -100, "mean", 0.1);
  nn::safe_save(nn::get_state_dict(lin), "/tmp/never-run.safetensors");

  namespace snn = tinygrad::static_nn;
  using Images = static_tensor<float, dyn, 1, 8, 8>;
  auto model = snn::seq(snn::Conv2d<1, 4, 3>{}, snn::relu, snn::MaxPool2d<2>{}, snn::Flatten<1>{}, snn::Linear<36, 10>{});
  Images imgs = Images::uniform(1.0, 2);
  static_tensor<float, dyn, 10> out = model(imgs);
  static_tensor<float> s = (out * 2.0f + 1.0f).sum();
  return int(v.size() + size_t(s.item<float>() > 0));
}
