#pragma once
// Optimizers (tinygrad.nn.optim) and learning-rate schedules. A step assigns every parameter
// and its state lazily, then realizes them all in one schedule. The learning rate and the
// Adam bias corrections live in device buffers, so changing them never recompiles.
#include "state.hpp"

namespace tinygrad::nn::optim {

/// the base of the optimizers: params (trained) and buffers (realized with each step), a learning rate on the device
class Optimizer {
 public:
  /// tensors that require grad are trained; the others (running statistics) are realized with each step
  Optimizer(const std::vector<Tensor>& tensors, double lr) : lr_(scalar_on(tensors, lr)) {
    for (auto& t : tensors) (t.requires_grad() ? params : buffers).push_back(t);
    if (params.empty()) throw Error("tinygrad::optim: none of the " + std::to_string(tensors.size()) + " tensors requires grad");
  }
  virtual ~Optimizer() = default;

  /// clear every parameter's .grad
  void zero_grad() TINYGRAD_MEMBER_DEF({ for (auto& p : params) p.zero_grad(); })
  /// update every parameter from its .grad (fill it with backward() first), realizing `also` (e.g. the loss)
  /// in the same schedule
  void step(std::vector<Tensor> also = {}) TINYGRAD_MEMBER_DEF({
    auto todo = schedule_step();
    todo.insert(todo.end(), also.begin(), also.end());
    Tensor::realize_all(todo);
  })
  /// the lazy updated tensors, for realizing together with something else (e.g. the loss)
  std::vector<Tensor> schedule_step() TINYGRAD_MEMBER_DEF({
    std::vector<Tensor> grads;
    for (auto& p : params) {
      auto g = p.grad();
      if (!g)
        throw Error("tinygrad::optim: a parameter of shape " + to_string(p.shape()) + " has no gradient; call backward() on a loss that uses it");
      grads.push_back(*g);
    }
    std::vector<Tensor> out = update(grads);
    out.insert(out.end(), params.begin(), params.end());
    out.insert(out.end(), buffers.begin(), buffers.end());
    return out;
  })
  /// the current learning rate (read back from the device)
  double lr() const TINYGRAD_MEMBER_DEF({ return lr_.item<float>(); })
  /// writes the device buffer in place: the next step reads it, nothing recompiles
  void set_lr(double v) TINYGRAD_MEMBER_DEF({ write_scalar(lr_, v); })
  /// SGD's momentum, Adam's beta1 (what torch's OneCycleLR cycles); an Error for an optimizer without one
  virtual double momentum() const { throw Error("tinygrad::optim: this optimizer has no momentum or beta1"); }
  /// like set_lr, a device buffer: a TinyJit'd step sees the new value
  virtual void set_momentum(double) { throw Error("tinygrad::optim: this optimizer has no momentum or beta1 to set"); }

  std::vector<Tensor> params, buffers;

 protected:
  // assign the new parameters (and state); return the state tensors to realize
  virtual std::vector<Tensor> update(const std::vector<Tensor>& grads) = 0;
  Tensor lr_;
  // a float32 scalar buffer on the tensors' device(s)
  static Tensor scalar_on(const std::vector<Tensor>& ts, double v) TINYGRAD_MEMBER_DEF({
    return Tensor::full({}, v, DType::Float32, ts.empty() ? "" : ts[0].device()).contiguous().realize();
  })
  static Tensor state_like(const Tensor& p) TINYGRAD_MEMBER_DEF({ return Tensor::zeros(p.shape(), p.dtype(), p.device()).contiguous().realize(); })
  static void write_scalar(const Tensor& t, double v) TINYGRAD_MEMBER_DEF({
    float f = float(v);
    for (auto& b : t.buffers()) b->copyin(&f);
  })
};

/// torch.optim.SGD (its positional order): L2 weight decay (g += wd * p), momentum b = momentum * b + (1 - dampening) * g
/// (the first step b = g), nesterov g += momentum * b; maximize ascends (g = -grad), as torch's keyword
class SGD : public Optimizer {
 public:
  SGD(const std::vector<Tensor>& tensors, double lr = 0.001, double momentum = 0, double dampening = 0, double weight_decay = 0,
      bool nesterov = false, bool maximize = false)
      : Optimizer(tensors, lr), momentum_(scalar_on(tensors, momentum)), dampening_(dampening), wd_(weight_decay), nesterov_(nesterov),
        maximize_(maximize) {
    if (nesterov_ && (momentum <= 0 || dampening_ != 0))
      throw Error("tinygrad::optim::SGD: nesterov needs momentum > 0 and dampening 0, got momentum " + std::to_string(momentum) +
                  ", dampening " + std::to_string(dampening_));
    if (momentum != 0) init_momentum();
  }
  double momentum() const override { return momentum_.item<float>(); }
  // NOTE: as torch's, a nonzero momentum on an SGD built without one turns momentum on (adding its buffers: do it before a
  // TinyJit captures the step)
  void set_momentum(double v) override {
    write_scalar(momentum_, v);
    if (v != 0 && b_.empty()) init_momentum();
  }

 protected:
  std::vector<Tensor> update(const std::vector<Tensor>& grads) override {
    for (size_t i = 0; i < params.size(); i++) {
      Tensor g = (maximize_ ? -grads[i] : grads[i]) + wd_ * params[i].detach();
      if (!b_.empty()) {
        b_[i].assign(momentum_ * b_[i] + (damp_ ? *damp_ * g : g));
        g = nesterov_ ? g + momentum_ * b_[i] : b_[i];
      }
      params[i].assign(params[i].detach() - g * lr_);
    }
    if (!damp_) return b_;
    damp_->assign(Tensor::full({}, 1 - dampening_, DType::Float32, damp_->device()));
    std::vector<Tensor> state = b_;
    state.push_back(*damp_);
    return state;
  }

 private:
  Tensor momentum_;
  double dampening_, wd_;
  bool nesterov_, maximize_;
  std::vector<Tensor> b_;
  std::optional<Tensor> damp_;
  void init_momentum() {
    for (auto& p : this->params) b_.push_back(state_like(p));
    // NOTE: torch's first step takes b = g undamped: the factor on g lives in a buffer, 1 until the first step
    if (dampening_ != 0) damp_ = scalar_on(this->params, 1);
  }
};

/// LAMB (layer-wise trust ratio); with adam = true it is AdamW (decoupled weight decay: p -= lr * wd * p, as
/// torch.optim.AdamW); Adam sets l2_ (weight decay added to the gradient, as torch.optim.Adam)
class LAMB : public Optimizer {
 public:
  LAMB(const std::vector<Tensor>& tensors, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-6,
       double weight_decay = 0, bool adam = false)
      : Optimizer(tensors, lr), b1_(scalar_on(tensors, b1)), b2_(b2), eps_(eps), wd_(weight_decay), adam_(adam),
        t_(scalar_on(tensors, 0)), b2_t_(scalar_on(tensors, 1)) {
    for (auto& p : this->params) { m_.push_back(state_like(p)); v_.push_back(state_like(p)); }
  }
  double momentum() const override { return b1_.item<float>(); }
  void set_momentum(double v) override { write_scalar(b1_, v); }

 protected:
  std::vector<Tensor> update(const std::vector<Tensor>& grads) override {
    // NOTE: torch's bias correction is 1 - beta1^step with the current beta1 (which OneCycleLR changes), not a running product
    t_.assign(t_ + 1);
    b2_t_.assign(b2_t_ * b2_);
    for (size_t i = 0; i < params.size(); i++) {
      Tensor g = maximize_ ? -grads[i] : grads[i];
      if (l2_ && wd_ != 0) g = g + wd_ * params[i].detach();
      m_[i].assign(b1_ * m_[i] + (1.0 - b1_) * g);
      v_[i].assign(b2_ * v_[i] + (1.0 - b2_) * (g * g));
      if (!vmax_.empty()) vmax_[i].assign(vmax_[i].maximum(v_[i]));
      Tensor m_hat = m_[i] / (1.0 - b1_.pow(t_)), v_hat = (vmax_.empty() ? v_[i] : vmax_[i]) / (1.0 - b2_t_);
      Tensor up = m_hat / (v_hat.sqrt() + eps_);
      if (!l2_) up = up + wd_ * params[i].detach();
      Tensor step = lr_ * up;
      if (!adam_) {
        Tensor r1 = params[i].detach().square().sum().sqrt(), r2 = up.square().sum().sqrt();
        step = step * (r1 > 0).where((r2 > 0).where(r1 / r2, 1.0), 1.0);
      }
      params[i].assign(params[i].detach() - step);
    }
    std::vector<Tensor> state{t_, b2_t_};
    for (auto* s : {&m_, &v_, &vmax_}) state.insert(state.end(), s->begin(), s->end());
    return state;
  }
  // torch's amsgrad (the denominator uses the running max of v) and maximize (ascend: g = -grad)
  void set_flags(bool amsgrad, bool maximize) {
    maximize_ = maximize;
    if (amsgrad) for (auto& p : this->params) vmax_.push_back(state_like(p));
  }

 protected:
  bool l2_ = false;

 private:
  Tensor b1_;
  double b2_, eps_, wd_;
  bool adam_, maximize_ = false;
  Tensor t_, b2_t_;
  std::vector<Tensor> m_, v_, vmax_;
};

/// torch.optim.Adam: weight_decay is L2 (added to the gradient before the moments)
struct Adam : LAMB {
  Adam(const std::vector<Tensor>& tensors, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8, double weight_decay = 0,
       bool amsgrad = false, bool maximize = false)
      : LAMB(tensors, lr, b1, b2, eps, weight_decay, true) {
    l2_ = true;
    set_flags(amsgrad, maximize);
  }
};
/// torch.optim.AdamW: decoupled weight decay
struct AdamW : LAMB {
  AdamW(const std::vector<Tensor>& tensors, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8, double weight_decay = 0.01,
        bool amsgrad = false, bool maximize = false)
      : LAMB(tensors, lr, b1, b2, eps, weight_decay, true) { set_flags(amsgrad, maximize); }
};

// ---- learning-rate schedules: call step() once per epoch (or per iteration for OneCycleLR) ----
/// the base of the learning-rate schedules: step() sets the optimizer's rate for the next epoch (torch's scheduler.step())
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& opt) : opt_(opt), base_lr_(opt.lr()) {}
  virtual ~LRScheduler() = default;
  /// advance one epoch and set the optimizer's learning rate
  virtual void step() { epoch_++; opt_.set_lr(lr_at(epoch_)); }
  /// the number of step() calls so far (torch's last_epoch)
  int64_t epoch() const TINYGRAD_MEMBER_DEF({ return epoch_; })
  /// the learning rate this schedule gives at epoch e
  virtual double lr_at(int64_t epoch) const = 0;

 protected:
  Optimizer& opt_;
  double base_lr_;
  int64_t epoch_ = 0;
};

/// lr * gamma^(epoch / step_size)
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1) : LRScheduler(opt), step_size_(step_size), gamma_(gamma) {}
  double lr_at(int64_t e) const override { return base_lr_ * std::pow(gamma_, double(e / step_size_)); }

 private:
  int64_t step_size_;
  double gamma_;
};

/// lr * gamma^(number of milestones <= epoch; a repeated milestone counts each time, as torch's)
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& opt, std::vector<int64_t> milestones, double gamma = 0.1)
      : LRScheduler(opt), milestones_(std::move(milestones)), gamma_(gamma) {}
  double lr_at(int64_t e) const override {
    return base_lr_ * std::pow(gamma_, double(std::count_if(milestones_.begin(), milestones_.end(), [&](int64_t m) { return e >= m; })));
  }

 private:
  std::vector<int64_t> milestones_;
  double gamma_;
};

/// cosine from lr down to eta_min over t_max epochs, then back up (torch's closed form: the cosine goes on past t_max)
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min = 0) : LRScheduler(opt), t_max_(t_max), eta_min_(eta_min) {}
  double lr_at(int64_t e) const override { return eta_min_ + (base_lr_ - eta_min_) * (1 + std::cos(M_PI * double(e) / double(t_max_))) / 2; }

 private:
  int64_t t_max_;
  double eta_min_;
};

/// torch's OneCycleLR (its positional order, less epochs / steps_per_epoch): from max_lr / div_factor up to max_lr by step
/// pct_start * total_steps - 1, then down to max_lr / div_factor / final_div_factor at step total_steps - 1 (three_phase: up,
/// back down to the start by step 2 * pct_start * total_steps - 2, then to the end); anneal_strategy "cos" or "linear".
/// cycle_momentum moves the optimizer's momentum (Adam's beta1) inversely, max_momentum -> base_momentum -> max_momentum.
/// Stepping past total_steps is an Error, as in torch.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& opt, double max_lr, int64_t total_steps, double pct_start = 0.3, std::string anneal_strategy = "cos",
             bool cycle_momentum = true, double base_momentum = 0.85, double max_momentum = 0.95, double div_factor = 25,
             double final_div_factor = 1e4, bool three_phase = false)
      : LRScheduler(opt), max_lr_(max_lr), total_(total_steps), pct_(pct_start), div_(div_factor), final_div_(final_div_factor),
        base_m_(base_momentum), max_m_(max_momentum), linear_(anneal_strategy == "linear"), three_phase_(three_phase),
        cycle_momentum_(cycle_momentum) {
    if (total_ <= 0) throw Error("tinygrad::optim::OneCycleLR: total_steps must be positive, got " + std::to_string(total_));
    if (!(pct_ >= 0 && pct_ <= 1)) throw Error("tinygrad::optim::OneCycleLR: pct_start must be in [0, 1], got " + std::to_string(pct_));
    if (!linear_ && anneal_strategy != "cos")
      throw Error("tinygrad::optim::OneCycleLR: anneal_strategy must be \"cos\" or \"linear\", got \"" + anneal_strategy + "\"");
    opt.set_lr(lr_at(0));
    if (cycle_momentum_) opt.set_momentum(momentum_at(0));
  }
  double lr_at(int64_t e) const override {
    double init = max_lr_ / div_, lo = init / final_div_;
    return three_phase_ ? at(e, {{init, max_lr_}, {max_lr_, init}, {init, lo}}) : at(e, {{init, max_lr_}, {max_lr_, lo}});
  }
  /// the momentum (beta1) torch's OneCycleLR sets at step e
  double momentum_at(int64_t e) const TINYGRAD_MEMBER_DEF({
    return three_phase_ ? at(e, {{max_m_, base_m_}, {base_m_, max_m_}, {max_m_, max_m_}}) : at(e, {{max_m_, base_m_}, {base_m_, max_m_}});
  })
  void step() override {
    LRScheduler::step();
    if (cycle_momentum_) opt_.set_momentum(momentum_at(epoch_));
  }

 private:
  double max_lr_;
  int64_t total_;
  double pct_, div_, final_div_, base_m_, max_m_;
  bool linear_, three_phase_, cycle_momentum_;
  struct Span { double from, to; };
  // the value at step e of the phases' (from, to) spans: two phases, or three when three_phase
  double at(int64_t e, const std::vector<Span>& spans) const {
    if (e > total_)
      throw Error("tinygrad::optim::OneCycleLR: tried to step " + std::to_string(e) + " times; total_steps is " + std::to_string(total_));
    double w = pct_ * double(total_), last = double(total_ - 1);
    std::vector<double> ends{w - 1, last};
    if (three_phase_) ends = {w - 1, 2 * w - 2, last};
    double start = 0;
    for (size_t i = 0;; i++) {
      if (double(e) <= ends[i] || i + 1 == ends.size()) {
        double t = (double(e) - start) / (ends[i] - start);
        const Span& p = spans[i];
        return linear_ ? (p.to - p.from) * t + p.from : p.to + (p.from - p.to) / 2 * (std::cos(M_PI * t) + 1);
      }
      start = ends[i];
    }
  }
};

}  // namespace tinygrad::nn::optim
