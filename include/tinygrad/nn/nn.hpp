#pragma once
// Layers (tinygrad.nn): plain structs of Tensors with PyTorch's initialisations; call them like
// functions. Weights require grad; running statistics do not (optimizers treat them as buffers).
#include <cmath>
#include "state.hpp"

namespace tinygrad::nn {

namespace detail {
// uniform(-bound, bound), requiring grad
TINYGRAD_API Tensor uniform_param(Shape shape, double bound) TINYGRAD_DEF({
  return Tensor::uniform(std::move(shape), -bound, bound).realize().requires_grad_();
})
TINYGRAD_API Tensor param(Shape shape, double value) TINYGRAD_DEF({
  return Tensor::full(std::move(shape), value).contiguous().realize().requires_grad_();
})
TINYGRAD_API Tensor buffer(Shape shape, double value) TINYGRAD_DEF({ return Tensor::full(std::move(shape), value).contiguous().realize(); })
// shape (1, c, 1, ...) to broadcast a per-channel vector over x
TINYGRAD_API Tensor channel(const Tensor& v, const Tensor& x) TINYGRAD_DEF({ Shape s(x.ndim(), 1); s[1] = v.numel(); return v.reshape(s); })
TINYGRAD_API void check_channels(const Tensor& x, int64_t c, const char* layer) TINYGRAD_DEF({
  if (x.ndim() < 2 || x.shape(1) != c)
    throw ShapeError(std::string("tinygrad::nn::") + layer + ": expects " + std::to_string(c) +
                     " channels in dim 1, got input " + to_string(x.shape()));
})
// x as a float dtype (ints: default_float) and the dtype its statistics are taken in: float16 and bfloat16 widen to
// float32 (their sums of squares overflow), as torch's norms do
TINYGRAD_API std::pair<Tensor, DType> stat_input(const Tensor& x) TINYGRAD_DEF({
  DType dt = is_float(x.dtype()) ? x.dtype() : dtypes::default_float;
  return {x.cast(itemsize(dt) < 4 ? DType::Float32 : dt), dt};
})
}  // namespace detail

/// y = x @ weight.T + bias; weight (out, in)
struct Linear {
  Tensor weight;
  std::optional<Tensor> bias;
  Linear(int64_t in, int64_t out, bool has_bias = true) : weight(detail::uniform_param({out, in}, 1.0 / std::sqrt(double(in)))) {
    if (has_bias) bias = detail::uniform_param({out}, 1.0 / std::sqrt(double(in)));
  }
  /// y = x W^T + b over the last dim
  Tensor operator()(const Tensor& x) const TINYGRAD_MEMBER_DEF({
    if (x.ndim() == 0 || x.shape(-1) != weight.shape(1))
      throw ShapeError("tinygrad::nn::Linear: expects " + std::to_string(weight.shape(1)) +
                       " features in the last dim, got input " + to_string(x.shape()));
    return x.linear(weight.T(), bias);
  })
};

/// n-d convolution over (N, C, *spatial); weight (out, in / groups, *kernel)
struct ConvNd {
  Tensor weight;
  std::optional<Tensor> bias;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  ConvNd(int64_t in, int64_t out, Shape kernel, std::vector<int64_t> stride_, std::vector<int64_t> padding_,
         std::vector<int64_t> dilation_, int64_t groups_, bool has_bias)
      : stride(std::move(stride_)), padding(std::move(padding_)), dilation(std::move(dilation_)), groups(groups_) {
    if (groups <= 0 || in % groups || out % groups)
      throw ShapeError("tinygrad::nn::Conv: " + std::to_string(in) + " in and " + std::to_string(out) + " out channels do not divide into " +
                       std::to_string(groups) + " groups");
    double bound = 1.0 / std::sqrt(double(in / groups * tinygrad::detail::prod(kernel)));
    Shape ws{out, in / groups};
    ws.insert(ws.end(), kernel.begin(), kernel.end());
    weight = detail::uniform_param(ws, bound);
    if (has_bias) bias = detail::uniform_param({out}, bound);
  }
  /// the convolution of x (N, C_in, ...), torch's padding / stride / dilation / groups
  Tensor operator()(const Tensor& x) const TINYGRAD_MEMBER_DEF({
    if (x.ndim() != weight.ndim())
      throw ShapeError("tinygrad::nn::Conv" + std::to_string(weight.ndim() - 2) + "d: expects a " + std::to_string(weight.ndim()) +
                       "-d input, got " + to_string(x.shape()));
    detail::check_channels(x, weight.shape(1) * groups, "Conv");
    return x.conv2d(weight, bias, {.stride = stride, .padding = padding, .dilation = dilation, .groups = groups});
  })
};
/// torch.nn.Conv1d (its positional order)
struct Conv1d : ConvNd {
  Conv1d(int64_t in, int64_t out, int64_t kernel, int64_t stride_ = 1, int64_t padding_ = 0, int64_t dilation_ = 1,
         int64_t groups_ = 1, bool bias_ = true)
      : ConvNd(in, out, {kernel}, {stride_}, {padding_}, {dilation_}, groups_, bias_) {}
};
/// torch.nn.Conv2d (its positional order)
struct Conv2d : ConvNd {
  Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t stride_ = 1, int64_t padding_ = 0, int64_t dilation_ = 1,
         int64_t groups_ = 1, bool bias_ = true)
      : ConvNd(in, out, {kernel, kernel}, {stride_}, {padding_}, {dilation_}, groups_, bias_) {}
  Conv2d(int64_t in, int64_t out, std::pair<int64_t, int64_t> kernel, std::vector<int64_t> stride_ = {1}, std::vector<int64_t> padding_ = {0},
         std::vector<int64_t> dilation_ = {1}, int64_t groups_ = 1, bool bias_ = true)
      : ConvNd(in, out, {kernel.first, kernel.second}, std::move(stride_), std::move(padding_), std::move(dilation_), groups_, bias_) {}
};

/// transposed 2-d convolution (the gradient of Conv2d w.r.t. its input); weight (in, out / groups, kh, kw).
/// out = (in - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1. PyTorch's init: fan_in is
/// weight.shape(1) * kh * kw, bound 1/sqrt(fan_in) for weight and bias.
struct ConvTranspose2d {
  Tensor weight;
  std::optional<Tensor> bias;
  std::vector<int64_t> stride, padding, output_padding, dilation;
  int64_t groups;
  ConvTranspose2d(int64_t in, int64_t out, std::pair<int64_t, int64_t> kernel, std::vector<int64_t> stride_ = {1},
                  std::vector<int64_t> padding_ = {0},
                  std::vector<int64_t> output_padding_ = {0}, std::vector<int64_t> dilation_ = {1}, int64_t groups_ = 1, bool has_bias = true)
      : stride(std::move(stride_)), padding(std::move(padding_)), output_padding(std::move(output_padding_)),
        dilation(std::move(dilation_)), groups(groups_) {
    if (groups <= 0 || in % groups || out % groups)
      throw ShapeError("tinygrad::nn::ConvTranspose2d: " + std::to_string(in) + " in and " + std::to_string(out) +
                       " out channels do not divide into " + std::to_string(groups) + " groups");
    double bound = 1.0 / std::sqrt(double(out / groups * kernel.first * kernel.second));
    weight = detail::uniform_param({in, out / groups, kernel.first, kernel.second}, bound);
    if (has_bias) bias = detail::uniform_param({out}, bound);
  }
  ConvTranspose2d(int64_t in, int64_t out, int64_t kernel, int64_t stride_ = 1, int64_t padding_ = 0,
                  int64_t output_padding_ = 0, int64_t dilation_ = 1, int64_t groups_ = 1, bool bias_ = true)
      : ConvTranspose2d(in, out, {kernel, kernel}, {stride_}, {padding_}, {output_padding_}, {dilation_}, groups_, bias_) {}
  /// the transposed convolution of x (N, C_in, H, W)
  Tensor operator()(const Tensor& x) const TINYGRAD_MEMBER_DEF({
    if (x.ndim() != 4) throw ShapeError("tinygrad::nn::ConvTranspose2d: expects a 4-d input, got " + to_string(x.shape()));
    detail::check_channels(x, weight.shape(0), "ConvTranspose2d");
    return x.conv_transpose2d(weight, bias,
                              {.stride = stride, .padding = padding, .dilation = dilation, .groups = groups, .output_padding = output_padding});
  })
};

/// batch normalisation over dim 1; in training uses batch statistics and updates the running ones
struct BatchNorm {
  std::optional<Tensor> weight, bias;
  Tensor running_mean, running_var, num_batches_tracked;
  double eps, momentum;
  bool track_running_stats;
  std::optional<bool> training;  // train/eval mode of this layer (nn::train, nn::eval); unset: TrainingScope decides
  /// this layer's mode if set (train / eval), else the TrainingScope's
  bool is_training() const TINYGRAD_MEMBER_DEF({ return training.value_or(tinygrad::training()); })
  BatchNorm(int64_t size, double eps_ = 1e-5, bool affine = true, bool track_running_stats_ = true, double momentum_ = 0.1)
      : running_mean(detail::buffer({size}, 0)), running_var(detail::buffer({size}, 1)), num_batches_tracked(detail::buffer({}, 0)),
        eps(eps_), momentum(momentum_), track_running_stats(track_running_stats_) {
    if (affine) { weight = detail::param({size}, 1); bias = detail::param({size}, 0); }
  }
  /// normalize x (N, C, ...) over all dims but 1
  Tensor operator()(const Tensor& x) const TINYGRAD_MEMBER_DEF({
    detail::check_channels(x, running_mean.numel(), "BatchNorm");
    std::vector<int64_t> axes{0};
    for (size_t i = 2; i < x.ndim(); i++) axes.push_back(int64_t(i));
    Tensor mean, var;
    auto [xa, dt] = detail::stat_input(x);  // normalized in float32 for half types, rounded once at the end
    if (is_training() || !track_running_stats) {
      mean = xa.mean(axes);
      Tensor y = xa - detail::channel(mean.detach(), xa);  // d(var)/d(mean) = 0
      var = (y * y).mean(axes);
      if (track_running_stats && is_training()) {
        double n = double(x.numel()), c = double(x.shape(1));
        Tensor rm = running_mean, rv = running_var, nb = num_batches_tracked;  // handles share the layer's tensors
        rm.assign(((1 - momentum) * running_mean + momentum * mean.detach()).cast(running_mean.dtype()));
        rv.assign(((1 - momentum) * running_var + momentum * n / std::max(n - c, 1.0) * var.detach()).cast(running_var.dtype()));
        nb.assign(num_batches_tracked + 1);
      }
    } else {
      mean = running_mean;
      var = running_var;
      dt = least_upper_dtype(least_upper_dtype(dt, mean.dtype()), var.dtype());
    }
    for (auto* p : {&weight, &bias}) if (*p) dt = least_upper_dtype(dt, (*p)->dtype());
    return xa.batchnorm(weight, bias, mean, (var + eps).rsqrt()).cast(dt);
  })
};
using BatchNorm1d = BatchNorm;
using BatchNorm2d = BatchNorm;

/// normalise over the last normalized_shape.size() dims
struct LayerNorm {
  Shape normalized_shape;
  std::optional<Tensor> weight, bias;
  double eps;
  LayerNorm(Shape normalized_shape_, double eps_ = 1e-5, bool elementwise_affine = true) : normalized_shape(std::move(normalized_shape_)), eps(eps_) {
    if (elementwise_affine) { weight = detail::param(normalized_shape, 1); bias = detail::param(normalized_shape, 0); }
  }
  LayerNorm(int64_t n, double eps_ = 1e-5, bool elementwise_affine = true) : LayerNorm(Shape{n}, eps_, elementwise_affine) {}
  /// normalize x over its trailing normalized_shape dims, then scale and shift
  Tensor operator()(const Tensor& x) const TINYGRAD_MEMBER_DEF({
    size_t k = normalized_shape.size();
    if (x.ndim() < k || Shape(x.shape().end() - int64_t(k), x.shape().end()) != normalized_shape)
      throw ShapeError("tinygrad::nn::LayerNorm: input " + to_string(x.shape()) + " does not end in " + to_string(normalized_shape));
    return x.layer_norm(normalized_shape, weight, bias, eps);
  })
};

/// x / rms(x) * weight over the last dim
struct RMSNorm {
  Tensor weight;
  double eps;
  RMSNorm(int64_t dim, double eps_ = 1e-6) : weight(detail::param({dim}, 1)), eps(eps_) {}
  /// x / sqrt(mean(x^2) + eps) * weight
  Tensor operator()(const Tensor& x) const TINYGRAD_MEMBER_DEF({
    if (x.ndim() == 0 || x.shape(-1) != weight.numel())
      throw ShapeError("tinygrad::nn::RMSNorm: expects " + std::to_string(weight.numel()) +
                       " features in the last dim, got input " + to_string(x.shape()));
    // float16 and bfloat16 normalize in float32 (their squares overflow past 256), then round (as torch)
    auto [xa, dt] = detail::stat_input(x);
    return (xa * ((xa * xa).mean(-1, true) + eps).rsqrt()).cast(dt) * weight;
  })
};

/// normalise each group of channels of each sample
struct GroupNorm {
  int64_t num_groups, num_channels;
  std::optional<Tensor> weight, bias;
  double eps;
  GroupNorm(int64_t num_groups_, int64_t num_channels_, double eps_ = 1e-5, bool affine = true)
      : num_groups(num_groups_), num_channels(num_channels_), eps(eps_) {
    if (num_groups <= 0 || num_channels % num_groups)
      throw ShapeError("tinygrad::nn::GroupNorm: " + std::to_string(num_channels) + " channels do not divide into " +
                       std::to_string(num_groups) + " groups");
    if (affine) { weight = detail::param({num_channels}, 1); bias = detail::param({num_channels}, 0); }
  }
  /// normalize x (N, C, ...) per group of channels, then scale and shift
  Tensor operator()(const Tensor& x) const TINYGRAD_MEMBER_DEF({
    detail::check_channels(x, num_channels, "GroupNorm");
    Tensor r = x.reshape({x.shape(0), num_groups, -1}).layernorm({-1}, eps).reshape(x.shape());
    return weight ? r * detail::channel(*weight, x) + detail::channel(*bias, x) : r;
  })
};

/// GroupNorm with one group per channel
struct InstanceNorm : GroupNorm {
  InstanceNorm(int64_t num_features, double eps_ = 1e-5, bool affine = true) : GroupNorm(num_features, num_features, eps_, affine) {}
};

// rows of weight (vocab, dim) picked by integer indices idx (...) -> (..., dim) (torch's F.embedding); an index
// outside [0, vocab) is an IndexError (detail::check_indices: when the op is built, or at the next sync)
TINYGRAD_API Tensor embedding(const Tensor& idx, const Tensor& weight) TINYGRAD_DEF({
  if (is_float(idx.dtype()) || idx.dtype() == DType::Bool)
    throw DTypeError("tinygrad::nn::embedding: indices must be integers, got " + to_string(idx.dtype()));
  if (weight.ndim() != 2) throw ShapeError("tinygrad::nn::embedding: weight must be (vocab, dim), got " + to_string(weight.shape()));
  tinygrad::detail::check_indices(idx, weight.shape(0), false, "nn::embedding");
  // a one-hot sum: the scheduler folds it into one read of weight per output (symbolic's fold_onehot_reduce)
  Tensor onehot = idx.unsqueeze(-1) == Tensor::arange(double(weight.shape(0)), std::nullopt, 1, DType::Int32, idx.device());
  return onehot.unsqueeze(-1).where(weight, 0.0).sum(-2);
})
/// torch.nn.Embedding: a (vocab, dim) table looked up by index
struct Embedding {
  Tensor weight;
  Embedding(int64_t vocab, int64_t dim) : weight(detail::uniform_param({vocab, dim}, std::sqrt(6.0 / double(vocab + dim)))) {}
  /// the rows of weight at idx (any shape of integers)
  Tensor operator()(const Tensor& idx) const TINYGRAD_MEMBER_DEF({ return embedding(idx, weight); })
};

// torch.nn.utils.clip_grad_norm_: total = the norm_type norm of all .grads together (inf: the largest magnitude); each
// .grad is scaled in place by min(1, max_norm / (total + 1e-6)). Returns total. Lazy, like the grads: realized with the
// optimizer's step, so it works inside TinyJit. Tensors without a .grad are skipped
TINYGRAD_API Tensor clip_grad_norm_(const std::vector<Tensor>& params, double max_norm, double norm_type = 2) TINYGRAD_DEF({
  std::vector<Tensor> grads, norms;
  for (auto& p : params) if (auto g = p.grad()) grads.push_back(*g);
  if (grads.empty()) return Tensor::zeros({});
  for (auto& g : grads) norms.push_back(g.norm(norm_type).cast(grads[0].dtype()));
  Tensor total = Tensor::stack(norms).norm(norm_type);
  Tensor coef = (max_norm / (total + 1e-6)).minimum(1.0);
  for (auto& g : grads) g.assign(g * coef);  // g shares the parameter's .grad: assign rebinds it
  return total;
})
// torch.nn.utils.clip_grad_value_: clamp each .grad to [-clip, clip] in place (lazily, as clip_grad_norm_)
TINYGRAD_API void clip_grad_value_(const std::vector<Tensor>& params, double clip) TINYGRAD_DEF({
  for (auto& p : params) if (auto g = p.grad()) g->assign(g->clip(-clip, clip));
})

/// zeroes elements with probability p in training, scaling the rest by 1/(1-p)
struct Dropout {
  double p;
  std::optional<bool> training;  // train/eval mode of this layer (nn::train, nn::eval); unset: TrainingScope decides
  explicit Dropout(double p_ = 0.5) : p(p_) {
    if (!(p >= 0 && p <= 1)) throw Error("tinygrad::nn::Dropout: p must be in [0, 1], got " + std::to_string(p));
  }
  /// x with elements zeroed with probability p and the rest scaled by 1 / (1 - p) in training; x itself in eval
  Tensor operator()(const Tensor& x) const TINYGRAD_MEMBER_DEF({
    TrainingScope mode(training.value_or(tinygrad::training()));
    return x.dropout(p);
  })
};

/// one step of an LSTM: (x, (h, c)) -> (h', c')
struct LSTMCell {
  Tensor weight_ih, weight_hh;
  std::optional<Tensor> bias_ih, bias_hh;
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true)
      : weight_ih(detail::uniform_param({4 * hidden_size, input_size}, 1.0 / std::sqrt(double(hidden_size)))),
        weight_hh(detail::uniform_param({4 * hidden_size, hidden_size}, 1.0 / std::sqrt(double(hidden_size)))) {
    if (bias) {
      bias_ih = detail::uniform_param({4 * hidden_size}, 1.0 / std::sqrt(double(hidden_size)));
      bias_hh = detail::uniform_param({4 * hidden_size}, 1.0 / std::sqrt(double(hidden_size)));
    }
  }
  /// (h', c') from x (N, input_size) and (h, c) (zeros when not given)
  std::pair<Tensor, Tensor> operator()(const Tensor& x, std::optional<std::pair<Tensor, Tensor>> hc = std::nullopt) const TINYGRAD_MEMBER_DEF({
    int64_t hs = weight_hh.shape(1);
    if (x.ndim() != 2 || x.shape(1) != weight_ih.shape(1))
      throw ShapeError("tinygrad::nn::LSTMCell: expects input (batch, " + std::to_string(weight_ih.shape(1)) + "), got " + to_string(x.shape()));
    if (!hc) hc = std::pair{Tensor::zeros({x.shape(0), hs}, x.dtype(), x.device()), Tensor::zeros({x.shape(0), hs}, x.dtype(), x.device())};
    Tensor gates = x.linear(weight_ih.T(), bias_ih) + hc->first.linear(weight_hh.T(), bias_hh);
    auto gate = gates.chunk(4, 1);
    Tensor i = gate[0].sigmoid(), f = gate[1].sigmoid(), g = gate[2].tanh(), o = gate[3].sigmoid();
    Tensor c = f * hc->second + i * g;
    return {o * c.tanh(), c};
  })
};

}  // namespace tinygrad::nn

TINYGRAD_STATE(tinygrad::nn::Linear, weight, bias);
TINYGRAD_STATE(tinygrad::nn::ConvNd, weight, bias);
TINYGRAD_STATE(tinygrad::nn::Conv1d, weight, bias);
TINYGRAD_STATE(tinygrad::nn::Conv2d, weight, bias);
TINYGRAD_STATE(tinygrad::nn::ConvTranspose2d, weight, bias);
TINYGRAD_STATE(tinygrad::nn::BatchNorm, weight, bias, running_mean, running_var, num_batches_tracked);
TINYGRAD_STATE(tinygrad::nn::LayerNorm, weight, bias);
TINYGRAD_STATE(tinygrad::nn::RMSNorm, weight);
TINYGRAD_STATE(tinygrad::nn::GroupNorm, weight, bias);
TINYGRAD_STATE(tinygrad::nn::InstanceNorm, weight, bias);
TINYGRAD_STATE(tinygrad::nn::Embedding, weight);
TINYGRAD_STATE(tinygrad::nn::LSTMCell, weight_ih, weight_hh, bias_ih, bias_hh);
