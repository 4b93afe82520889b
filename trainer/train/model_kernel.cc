#include "trainer/train/model_kernel.h"

#include <cmath>
#include <memory>
#include <span>

#include "absl/synchronization/mutex.h"
#include "coordinator/base/status_macros.h"
#include "coordinator/base/strings.h"
#include "coordinator/base/values.h"
#include "coordinator/ps/spare_buffers.h"
#include "trainer/models/batch_ids.h"
#include "trainer/models/ctr_model.h"
#include "trainer/models/softmax_regression.h"

namespace tj::train {
namespace {

constexpr char kSoftmaxWeights[] = "softmax/w";
constexpr char kSoftmaxBias[] = "softmax/b";
constexpr char kCtrTable[] = "ctr/emb";
constexpr char kCtrBias[] = "ctr/bias";
constexpr char kCtrScale[] = "ctr/scale";  // the dense head's a (CtrHead::kDense)

v1::VariableSpec ZeroVariable(const std::string& name, std::vector<int64_t> shape,
                              const v1::Optimizer& optimizer) {
  v1::VariableSpec spec;
  spec.set_name(name);
  for (int64_t d : shape) spec.add_shape(d);
  spec.mutable_initializer()->set_kind(v1::Initializer::ZEROS);
  *spec.mutable_optimizer() = optimizer;
  return spec;
}

class SoftmaxKernel : public ModelKernel {
 public:
  SoftmaxKernel(const TrainConfig& config, int64_t dim, int32_t num_classes)
      : model_(dim, num_classes),
        optimizer_(OptimizerOf(config)),
        streamed_(config.streamed_step) {}

  std::vector<v1::VariableSpec> Variables() const override {
    return {ZeroVariable(kSoftmaxWeights, {model_.dim(), model_.num_classes()}, optimizer_),
            ZeroVariable(kSoftmaxBias, {model_.num_classes()}, optimizer_)};
  }
  std::vector<v1::TableSpec> Tables() const override { return {}; }

  absl::StatusOr<TrainStepStats> TrainStep(const Batch& batch,
                                           const ShardedPsClient& ps) const override {
    WorkspaceLease lease(*this);
    Workspace& ws = lease.get();
    TJ_RETURN_IF_ERROR(ps.PullInto({kSoftmaxWeights, kSoftmaxBias}, ws.params));
    if (streamed_) return StreamedStep(batch, ps, ws);
    std::span<float> dw = ws.Gradient(0, {model_.dim(), model_.num_classes()});
    std::span<float> db = ws.Gradient(1, {model_.num_classes()});
    TJ_ASSIGN_OR_RETURN(double loss, model_.LossAndGradient(batch, Floats(ws.params[0]),
                                                            Floats(ws.params[1]), dw, db));
    TJ_RETURN_IF_ERROR(ps.Push(
        {kSoftmaxWeights, kSoftmaxBias},
        std::vector<std::shared_ptr<const v1::Tensor>>(ws.gradients.begin(), ws.gradients.end())));
    return TrainStepStats{loss, batch.num_rows};
  }

  absl::StatusOr<EvalPartial> Evaluate(const Batch& batch,
                                       const ShardedPsClient& ps) const override {
    WorkspaceLease lease(*this);
    Workspace& ws = lease.get();
    TJ_RETURN_IF_ERROR(ps.PullInto({kSoftmaxWeights, kSoftmaxBias}, ws.params));
    TJ_ASSIGN_OR_RETURN(SoftmaxMetrics metrics,
                        model_.Evaluate(batch, Floats(ws.params[0]), Floats(ws.params[1])));
    EvalPartial partial;
    partial.examples = batch.num_rows;
    partial.loss_sum = metrics.loss * static_cast<double>(batch.num_rows);
    partial.correct = std::llround(metrics.accuracy * static_cast<double>(batch.num_rows));
    return partial;
  }

 private:
  struct Workspace;

  // The streamed step: W's gradient rows need the logits, which need every row of W, so the values
  // are pulled whole (no StreamStep); then b's gradient is pushed, and W's is written a few rows at
  // a time and pushed slice by slice while the next rows are computed (StreamPush). b first: it is
  // checked whole before it leaves, and a non-finite logit gradient makes it non-finite too, so a
  // bad step is refused before any of W is pushed.
  absl::StatusOr<TrainStepStats> StreamedStep(const Batch& batch, const ShardedPsClient& ps,
                                              Workspace& ws) const {
    ws.dlogits.resize(static_cast<size_t>(batch.num_rows) *
                      static_cast<size_t>(model_.num_classes()));
    std::span<float> db = ws.Gradient(1, {model_.num_classes()});
    TJ_ASSIGN_OR_RETURN(
        double loss, model_.LossAndLogitGradient(batch, Floats(ws.params[0]), Floats(ws.params[1]),
                                                 ws.dlogits, db));
    TJ_RETURN_IF_ERROR(
        ps.Push({kSoftmaxBias}, std::vector<std::shared_ptr<const v1::Tensor>>{ws.gradients[1]}));
    const int64_t k = model_.num_classes();
    TJ_RETURN_IF_ERROR(
        ps.StreamPush(kSoftmaxWeights, ws.GradientTensor(0),
                      [&](int64_t first_element, std::span<float> dw_rows) -> absl::Status {
                        model_.WeightGradientRows(batch, ws.dlogits, first_element / k, dw_rows);
                        return absl::OkStatus();
                      }));
    return TrainStepStats{loss, batch.num_rows};
  }

  // The buffers of one step, reused by the next: the pulled values (received in place, slice by
  // slice) and the gradients (pushed from views). A worker runs one step at a time, so it holds
  // one workspace: about twice the model, whatever its size. When the kernel goes (a restarted
  // coordinator re-creates the trainer), its large buffers are left as spares for the next
  // kernel's first step (spare_buffers.h), so it does not fault in 2x the model afresh.
  struct Workspace {
    std::vector<v1::Tensor> params;
    std::vector<std::shared_ptr<v1::Tensor>> gradients;
    std::vector<float> dlogits;  // streamed step: [batch rows x classes]

    ~Workspace() {
      for (v1::Tensor& tensor : params) GiveSpareBuffer(std::move(*tensor.mutable_data()));
      for (std::shared_ptr<v1::Tensor>& g : gradients) {
        if (g != nullptr && g.use_count() == 1) GiveSpareBuffer(std::move(*g->mutable_data()));
      }
    }

    // Gradient i's tensor, free to be overwritten: gRPC may still hold a reference to the last
    // push's buffer (a call that failed mid-write); then a fresh one is taken.
    std::shared_ptr<v1::Tensor>& GradientTensor(size_t i) {
      if (gradients.size() <= i) gradients.resize(i + 1);
      std::shared_ptr<v1::Tensor>& g = gradients[i];
      if (g == nullptr || g.use_count() > 1) g = std::make_shared<v1::Tensor>();
      return g;
    }

    // Gradient i, shaped and sized, ready to be overwritten.
    std::span<float> Gradient(size_t i, std::vector<int64_t> shape) {
      v1::Tensor& g = *GradientTensor(i);
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      g.set_dtype(v1::DTYPE_FLOAT32);
      g.mutable_shape()->Assign(shape.begin(), shape.end());
      const size_t bytes = static_cast<size_t>(n) * sizeof(float);
      if (g.data().size() != bytes && !TakeSpareBuffer(*g.mutable_data(), bytes)) {
        g.mutable_data()->resize(bytes);
      }
      return {reinterpret_cast<float*>(g.mutable_data()->data()), static_cast<size_t>(n)};
    }
  };

  class WorkspaceLease {
   public:
    explicit WorkspaceLease(const SoftmaxKernel& kernel) : kernel_(kernel) {
      absl::MutexLock lock(&kernel_.mu_);
      if (!kernel_.free_.empty()) {
        workspace_ = std::move(kernel_.free_.back());
        kernel_.free_.pop_back();
      }
      if (workspace_ == nullptr) workspace_ = std::make_unique<Workspace>();
    }
    ~WorkspaceLease() {
      absl::MutexLock lock(&kernel_.mu_);
      kernel_.free_.push_back(std::move(workspace_));
    }
    Workspace& get() { return *workspace_; }

   private:
    const SoftmaxKernel& kernel_;
    std::unique_ptr<Workspace> workspace_;
  };

  static std::span<const float> Floats(const v1::Tensor& t) {
    return {reinterpret_cast<const float*>(t.data().data()), t.data().size() / sizeof(float)};
  }

  SoftmaxRegression model_;
  v1::Optimizer optimizer_;
  const bool streamed_;
  mutable absl::Mutex mu_;
  // Workspaces not in use: as many as steps ever ran at once (one per executor).
  mutable std::vector<std::unique_ptr<Workspace>> free_ ABSL_GUARDED_BY(mu_);
};

class CtrKernel : public ModelKernel {
 public:
  CtrKernel(const TrainConfig& config, CtrModel model)
      : config_(config), model_(std::move(model)), optimizer_(OptimizerOf(config)) {}

  std::vector<v1::VariableSpec> Variables() const override {
    std::vector<v1::VariableSpec> variables = {ZeroVariable(kCtrBias, {1}, optimizer_)};
    if (dense_head()) {
      // Keras' Dense(1) kernel: Glorot uniform, whose limit sqrt(6 / (fan_in + fan_out)) is
      // sqrt(3) for a 1x1 kernel.
      v1::VariableSpec scale = ZeroVariable(kCtrScale, {1}, optimizer_);
      scale.mutable_initializer()->set_kind(v1::Initializer::RANDOM_UNIFORM);
      scale.mutable_initializer()->set_minval(-std::sqrt(3.0f));
      scale.mutable_initializer()->set_maxval(std::sqrt(3.0f));
      scale.mutable_initializer()->set_seed(config_.seed);
      variables.push_back(std::move(scale));
    }
    return variables;
  }
  std::vector<v1::TableSpec> Tables() const override {
    v1::TableSpec table;
    table.set_name(kCtrTable);
    table.set_dim(model_.row_dim());
    if (model_.type() == CtrModelType::kFactorizationMachine) {
      // Factors that start at exactly 0 never get a gradient (every pair term is 0).
      v1::Initializer& init = *table.mutable_initializer();
      init.set_kind(config_.init);
      if (config_.init == v1::Initializer::RANDOM_UNIFORM) {
        init.set_minval(-static_cast<float>(config_.init_limit));
        init.set_maxval(static_cast<float>(config_.init_limit));
      } else {
        init.set_stddev(static_cast<float>(config_.init_stddev));
      }
      init.set_seed(config_.seed);
    } else {
      table.mutable_initializer()->set_kind(v1::Initializer::ZEROS);
    }
    *table.mutable_optimizer() = optimizer_;
    return {table};
  }

  absl::StatusOr<TrainStepStats> TrainStep(const Batch& batch,
                                           const ShardedPsClient& ps) const override {
    TJ_ASSIGN_OR_RETURN(Pulled pulled, PullParams(batch, ps));
    std::vector<float> grad_rows(pulled.rows.size());
    CtrHeadParams grad_head;
    TJ_ASSIGN_OR_RETURN(double loss, model_.LossAndGradient(batch, pulled.ids, pulled.rows,
                                                            pulled.head, grad_rows, grad_head));
    const SparseUpdate update{kCtrTable, pulled.ids.unique, grad_rows};
    TJ_RETURN_IF_ERROR(ps.PushSparse({&update, 1}));
    std::vector<v1::Tensor> head_gradients;
    head_gradients.push_back(FloatTensor(std::vector<float>{grad_head.bias}, {1}));
    if (dense_head()) {
      head_gradients.push_back(FloatTensor(std::vector<float>{grad_head.scale}, {1}));
    }
    TJ_RETURN_IF_ERROR(ps.Push(HeadVariables(), std::move(head_gradients)));
    return TrainStepStats{loss, batch.num_rows};
  }

  absl::StatusOr<EvalPartial> Evaluate(const Batch& batch,
                                       const ShardedPsClient& ps) const override {
    TJ_ASSIGN_OR_RETURN(Pulled pulled, PullParams(batch, ps));
    EvalPartial partial;
    partial.examples = batch.num_rows;
    partial.scores.resize(static_cast<size_t>(batch.num_rows));
    std::vector<float> logits(static_cast<size_t>(batch.num_rows));
    TJ_RETURN_IF_ERROR(model_.Logits(batch, pulled.ids, pulled.rows, pulled.head, logits));
    partial.labels = batch.labels;
    for (int64_t r = 0; r < batch.num_rows; ++r) {
      const double z = logits[static_cast<size_t>(r)];
      const int32_t y = batch.labels[static_cast<size_t>(r)];
      partial.loss_sum += LogLoss(z, y);
      const double p = Sigmoid(z);
      partial.scores[static_cast<size_t>(r)] = static_cast<float>(p);
      partial.correct += ((p >= 0.5) == (y == 1)) ? 1 : 0;
    }
    return partial;
  }

 private:
  struct Pulled {
    BatchIds ids;
    std::vector<float> rows;
    CtrHeadParams head;
  };
  bool dense_head() const { return model_.head() == CtrHead::kDense; }
  std::vector<std::string> HeadVariables() const {
    if (dense_head()) return {kCtrBias, kCtrScale};
    return {kCtrBias};
  }
  absl::StatusOr<Pulled> PullParams(const Batch& batch, const ShardedPsClient& ps) const {
    Pulled pulled;
    TJ_ASSIGN_OR_RETURN(pulled.ids, DedupIds(batch));
    const SparseLookup lookup{kCtrTable, pulled.ids.unique};
    TJ_ASSIGN_OR_RETURN(std::vector<v1::Tensor> rows, ps.Lookup({&lookup, 1}));
    TJ_ASSIGN_OR_RETURN(pulled.rows, FloatsOf(rows[0]));
    TJ_ASSIGN_OR_RETURN(std::vector<v1::Tensor> head, ps.Pull(HeadVariables()));
    TJ_ASSIGN_OR_RETURN(std::vector<float> bias, FloatsOf(head.at(0)));
    pulled.head.bias = bias.at(0);
    if (dense_head()) {
      TJ_ASSIGN_OR_RETURN(std::vector<float> scale, FloatsOf(head.at(1)));
      pulled.head.scale = scale.at(0);
    }
    return pulled;
  }

  TrainConfig config_;
  CtrModel model_;
  v1::Optimizer optimizer_;
};

}  // namespace

v1::Optimizer OptimizerOf(const TrainConfig& config) {
  v1::Optimizer optimizer;
  const auto lr = static_cast<float>(config.learning_rate);
  if (config.optimizer == "adagrad") {
    optimizer.mutable_adagrad()->set_learning_rate(lr);
  } else if (config.optimizer == "adam") {
    optimizer.mutable_adam()->set_learning_rate(lr);
  } else {
    optimizer.mutable_sgd()->set_learning_rate(lr);
  }
  return optimizer;
}

absl::StatusOr<std::unique_ptr<ModelKernel>> MakeModelKernel(const TrainConfig& config, int64_t dim,
                                                             int32_t num_classes) {
  if (config.model == "softmax") {
    if (dim < 1 || num_classes < 2) {
      return absl::InvalidArgumentError(
          Cat("softmax needs features and at least 2 classes; the "
              "data has ",
              dim, " features and ", num_classes, " classes"));
    }
    return std::unique_ptr<ModelKernel>(new SoftmaxKernel(config, dim, num_classes));
  }
  const bool fm = config.model == "fm";
  TJ_ASSIGN_OR_RETURN(CtrModel model, CtrModel::Create(fm ? CtrModelType::kFactorizationMachine
                                                          : CtrModelType::kLogisticRegression,
                                                       fm ? config.factor_dim : 0, config.head));
  return std::unique_ptr<ModelKernel>(new CtrKernel(config, std::move(model)));
}

}  // namespace tj::train
