#pragma once
// Optimizers (tinygrad.nn.optim) and learning-rate schedules. A step assigns every parameter
// and its state lazily, then realizes them all in one schedule. The learning rate and the
// Adam bias corrections live in device buffers, so changing them never recompiles.
#include "state.hpp"

namespace tinygrad::nn::optim {

class Optimizer {
 public:
  // tensors that require grad are trained; the others (running statistics) are realized with each step
  Optimizer(const std::vector<Tensor>& tensors, double lr) : lr_(scalar_on(tensors, lr)) {
    for (auto& t : tensors) (t.requires_grad() ? params : buffers).push_back(t);
    if (params.empty()) throw Error("tinygrad::optim: none of the " + std::to_string(tensors.size()) + " tensors requires grad");
  }
  virtual ~Optimizer() = default;

  void zero_grad() TINYGRAD_MEMBER_DEF({ for (auto& p : params) p.zero_grad(); })
  // update every parameter from its .grad (fill it with backward() first), realizing `also` (e.g. the loss)
  // in the same schedule
  void step(std::vector<Tensor> also = {}) TINYGRAD_MEMBER_DEF({
    auto todo = schedule_step();
    todo.insert(todo.end(), also.begin(), also.end());
    Tensor::realize_all(todo);
  })
  // the lazy updated tensors, for realizing together with something else (e.g. the loss)
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
  double lr() const TINYGRAD_MEMBER_DEF({ return lr_.item<float>(); })
  // writes the device buffer in place: the next step reads it, nothing recompiles
  void set_lr(double v) TINYGRAD_MEMBER_DEF({
    float f = float(v);
    for (auto& b : lr_.buffers()) b->copyin(&f);
  })

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
};

// torch.optim.SGD (its positional order): L2 weight decay (g += wd * p), momentum b = momentum * b + (1 - dampening) * g
// (the first step b = g), nesterov g += momentum * b
class SGD : public Optimizer {
 public:
  SGD(const std::vector<Tensor>& tensors, double lr = 0.001, double momentum = 0, double dampening = 0, double weight_decay = 0,
      bool nesterov = false)
      : Optimizer(tensors, lr), momentum_(momentum), dampening_(dampening), wd_(weight_decay), nesterov_(nesterov) {
    if (nesterov_ && (momentum_ <= 0 || dampening_ != 0))
      throw Error("tinygrad::optim::SGD: nesterov needs momentum > 0 and dampening 0, got momentum " + std::to_string(momentum_) +
                  ", dampening " + std::to_string(dampening_));
    if (momentum_ != 0) for (auto& p : this->params) b_.push_back(state_like(p));
    // NOTE: torch's first step takes b = g undamped: the factor on g lives in a buffer, 1 until the first step
    if (momentum_ != 0 && dampening_ != 0) damp_ = scalar_on(this->params, 1);
  }

 protected:
  std::vector<Tensor> update(const std::vector<Tensor>& grads) override {
    for (size_t i = 0; i < params.size(); i++) {
      Tensor g = grads[i] + wd_ * params[i].detach();
      if (momentum_ != 0) {
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
  double momentum_, dampening_, wd_;
  bool nesterov_;
  std::vector<Tensor> b_;
  std::optional<Tensor> damp_;
};

// LAMB (layer-wise trust ratio); with adam = true it is AdamW (decoupled weight decay: p -= lr * wd * p, as
// torch.optim.AdamW); Adam sets l2_ (weight decay added to the gradient, as torch.optim.Adam)
class LAMB : public Optimizer {
 public:
  LAMB(const std::vector<Tensor>& tensors, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-6,
       double weight_decay = 0, bool adam = false)
      : Optimizer(tensors, lr), b1_(b1), b2_(b2), eps_(eps), wd_(weight_decay), adam_(adam),
        b1_t_(scalar_on(tensors, 1)), b2_t_(scalar_on(tensors, 1)) {
    for (auto& p : this->params) { m_.push_back(state_like(p)); v_.push_back(state_like(p)); }
  }

 protected:
  std::vector<Tensor> update(const std::vector<Tensor>& grads) override {
    b1_t_.assign(b1_t_ * b1_);
    b2_t_.assign(b2_t_ * b2_);
    for (size_t i = 0; i < params.size(); i++) {
      Tensor g = l2_ && wd_ != 0 ? grads[i] + wd_ * params[i].detach() : grads[i];
      m_[i].assign(b1_ * m_[i] + (1.0 - b1_) * g);
      v_[i].assign(b2_ * v_[i] + (1.0 - b2_) * (g * g));
      Tensor m_hat = m_[i] / (1.0 - b1_t_), v_hat = v_[i] / (1.0 - b2_t_);
      Tensor up = m_hat / (v_hat.sqrt() + eps_);
      if (!l2_) up = up + wd_ * params[i].detach();
      Tensor step = lr_ * up;
      if (!adam_) {
        Tensor r1 = params[i].detach().square().sum().sqrt(), r2 = up.square().sum().sqrt();
        step = step * (r1 > 0).where((r2 > 0).where(r1 / r2, 1.0), 1.0);
      }
      params[i].assign(params[i].detach() - step);
    }
    std::vector<Tensor> state{b1_t_, b2_t_};
    state.insert(state.end(), m_.begin(), m_.end());
    state.insert(state.end(), v_.begin(), v_.end());
    return state;
  }

 protected:
  bool l2_ = false;

 private:
  double b1_, b2_, eps_, wd_;
  bool adam_;
  Tensor b1_t_, b2_t_;
  std::vector<Tensor> m_, v_;
};

// torch.optim.Adam: weight_decay is L2 (added to the gradient before the moments)
struct Adam : LAMB {
  Adam(const std::vector<Tensor>& tensors, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8, double weight_decay = 0)
      : LAMB(tensors, lr, b1, b2, eps, weight_decay, true) { l2_ = true; }
};
// torch.optim.AdamW: decoupled weight decay
struct AdamW : LAMB {
  AdamW(const std::vector<Tensor>& tensors, double lr = 0.001, double b1 = 0.9, double b2 = 0.999, double eps = 1e-8, double weight_decay = 0.01)
      : LAMB(tensors, lr, b1, b2, eps, weight_decay, true) {}
};

// ---- learning-rate schedules: call step() once per epoch (or per iteration for OneCycleLR) ----
class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& opt) : opt_(opt), base_lr_(opt.lr()) {}
  virtual ~LRScheduler() = default;
  void step() TINYGRAD_MEMBER_DEF({ epoch_++; opt_.set_lr(lr_at(epoch_)); })
  int64_t epoch() const TINYGRAD_MEMBER_DEF({ return epoch_; })
  virtual double lr_at(int64_t epoch) const = 0;

 protected:
  Optimizer& opt_;
  double base_lr_;
  int64_t epoch_ = 0;
};

// lr * gamma^(epoch / step_size)
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& opt, int64_t step_size, double gamma = 0.1) : LRScheduler(opt), step_size_(step_size), gamma_(gamma) {}
  double lr_at(int64_t e) const override { return base_lr_ * std::pow(gamma_, double(e / step_size_)); }

 private:
  int64_t step_size_;
  double gamma_;
};

// lr * gamma^(number of milestones <= epoch; a repeated milestone counts each time, as torch's)
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

// cosine from lr down to eta_min over t_max epochs, then back up (torch's closed form: the cosine goes on past t_max)
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& opt, int64_t t_max, double eta_min = 0) : LRScheduler(opt), t_max_(t_max), eta_min_(eta_min) {}
  double lr_at(int64_t e) const override { return eta_min_ + (base_lr_ - eta_min_) * (1 + std::cos(M_PI * double(e) / double(t_max_))) / 2; }

 private:
  int64_t t_max_;
  double eta_min_;
};

// torch's OneCycleLR: from max_lr / div_factor up to max_lr by step pct_start * total_steps - 1, then down to
// max_lr / div_factor / final_div_factor at step total_steps - 1 (three_phase: up, back down to the start by step
// 2 * pct_start * total_steps - 2, then to the end); anneal_strategy "cos" or "linear". Stepping past total_steps is an
// Error, as in torch. NOTE: torch also cycles the optimizer's momentum (cycle_momentum); here momentum stays fixed.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& opt, double max_lr, int64_t total_steps, double pct_start = 0.3, std::string anneal_strategy = "cos",
             double div_factor = 25, double final_div_factor = 1e4, bool three_phase = false)
      : LRScheduler(opt), max_lr_(max_lr), total_(total_steps), pct_(pct_start), div_(div_factor), final_div_(final_div_factor),
        linear_(anneal_strategy == "linear"), three_phase_(three_phase) {
    if (total_ <= 0) throw Error("tinygrad::optim::OneCycleLR: total_steps must be positive, got " + std::to_string(total_));
    if (!(pct_ >= 0 && pct_ <= 1)) throw Error("tinygrad::optim::OneCycleLR: pct_start must be in [0, 1], got " + std::to_string(pct_));
    if (!linear_ && anneal_strategy != "cos")
      throw Error("tinygrad::optim::OneCycleLR: anneal_strategy must be \"cos\" or \"linear\", got \"" + anneal_strategy + "\"");
    opt.set_lr(lr_at(0));
  }
  double lr_at(int64_t e) const override {
    if (e > total_)
      throw Error("tinygrad::optim::OneCycleLR: tried to step " + std::to_string(e) + " times; total_steps is " + std::to_string(total_));
    double init = max_lr_ / div_, lo = init / final_div_, w = pct_ * double(total_), last = double(total_ - 1);
    struct Phase { double end, from, to; };
    std::vector<Phase> phases{{w - 1, init, max_lr_}, {last, max_lr_, lo}};
    if (three_phase_) phases = {{w - 1, init, max_lr_}, {2 * w - 2, max_lr_, init}, {last, init, lo}};
    double start = 0;
    for (size_t i = 0;; i++) {
      const Phase& p = phases[i];
      if (double(e) <= p.end || i + 1 == phases.size()) {
        double t = (double(e) - start) / (p.end - start);
        return linear_ ? (p.to - p.from) * t + p.from : p.to + (p.from - p.to) / 2 * (std::cos(M_PI * t) + 1);
      }
      start = p.end;
    }
  }

 private:
  double max_lr_;
  int64_t total_;
  double pct_, div_, final_div_;
  bool linear_, three_phase_;
};

}  // namespace tinygrad::nn::optim
