#include "trainer/train/model_kernel.h"

#include <cmath>
#include <memory>
#include <span>

#include "absl/synchronization/mutex.h"

#include "coordinator/base/status_macros.h"
#include "coordinator/base/strings.h"
#include "coordinator/base/values.h"
#include "trainer/models/batch_ids.h"
#include "trainer/models/ctr_model.h"
#include "trainer/models/softmax_regression.h"

namespace tj::train {
namespace {

constexpr char kSoftmaxWeights[] = "softmax/w";
constexpr char kSoftmaxBias[] = "softmax/b";
constexpr char kCtrTable[] = "ctr/emb";
constexpr char kCtrBias[] = "ctr/bias";

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
      : model_(dim, num_classes), optimizer_(OptimizerOf(config)) {}

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
    std::span<float> dw = ws.Gradient(0, {model_.dim(), model_.num_classes()});
    std::span<float> db = ws.Gradient(1, {model_.num_classes()});
    TJ_ASSIGN_OR_RETURN(double loss, model_.LossAndGradient(batch, Floats(ws.params[0]),
                                                            Floats(ws.params[1]), dw, db));
    TJ_RETURN_IF_ERROR(ps.Push({kSoftmaxWeights, kSoftmaxBias},
                               std::vector<std::shared_ptr<const v1::Tensor>>(
                                   ws.gradients.begin(), ws.gradients.end())));
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
  // The buffers of one step, reused by the next: the pulled values (received in place, slice by
  // slice) and the gradients (pushed from views). A worker runs one step at a time, so it holds
  // one workspace: about twice the model, whatever its size.
  struct Workspace {
    std::vector<v1::Tensor> params;
    std::vector<std::shared_ptr<v1::Tensor>> gradients;

    // Gradient i, shaped and sized, ready to be overwritten. gRPC may still hold a reference to
    // the last push's buffer (a call that failed mid-write): then a fresh one is taken.
    std::span<float> Gradient(size_t i, std::vector<int64_t> shape) {
      if (gradients.size() <= i) gradients.resize(i + 1);
      std::shared_ptr<v1::Tensor>& g = gradients[i];
      if (g == nullptr || g.use_count() > 1) g = std::make_shared<v1::Tensor>();
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      g->set_dtype(v1::DTYPE_FLOAT32);
      g->mutable_shape()->Assign(shape.begin(), shape.end());
      if (g->data().size() != static_cast<size_t>(n) * sizeof(float)) {
        g->mutable_data()->resize(static_cast<size_t>(n) * sizeof(float));
      }
      return {reinterpret_cast<float*>(g->mutable_data()->data()), static_cast<size_t>(n)};
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
  mutable absl::Mutex mu_;
  // Workspaces not in use: as many as steps ever ran at once (one per executor).
  mutable std::vector<std::unique_ptr<Workspace>> free_ ABSL_GUARDED_BY(mu_);
};

class CtrKernel : public ModelKernel {
 public:
  CtrKernel(const TrainConfig& config, CtrModel model)
      : config_(config), model_(std::move(model)), optimizer_(OptimizerOf(config)) {}

  std::vector<v1::VariableSpec> Variables() const override {
    return {ZeroVariable(kCtrBias, {1}, optimizer_)};
  }
  std::vector<v1::TableSpec> Tables() const override {
    v1::TableSpec table;
    table.set_name(kCtrTable);
    table.set_dim(model_.row_dim());
    if (model_.type() == CtrModelType::kFactorizationMachine) {
      // Factors that start at exactly 0 never get a gradient (every pair term is 0).
      table.mutable_initializer()->set_kind(v1::Initializer::RANDOM_NORMAL);
      table.mutable_initializer()->set_stddev(static_cast<float>(config_.init_stddev));
      table.mutable_initializer()->set_seed(config_.seed);
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
    float grad_bias = 0;
    TJ_ASSIGN_OR_RETURN(double loss, model_.LossAndGradient(batch, pulled.ids, pulled.rows,
                                                            pulled.bias, grad_rows, grad_bias));
    const SparseUpdate update{kCtrTable, pulled.ids.unique, grad_rows};
    TJ_RETURN_IF_ERROR(ps.PushSparse({&update, 1}));
    std::vector<v1::Tensor> bias_gradient;
    bias_gradient.push_back(FloatTensor(std::vector<float>{grad_bias}, {1}));
    TJ_RETURN_IF_ERROR(ps.Push({kCtrBias}, std::move(bias_gradient)));
    return TrainStepStats{loss, batch.num_rows};
  }

  absl::StatusOr<EvalPartial> Evaluate(const Batch& batch,
                                       const ShardedPsClient& ps) const override {
    TJ_ASSIGN_OR_RETURN(Pulled pulled, PullParams(batch, ps));
    EvalPartial partial;
    partial.examples = batch.num_rows;
    partial.scores.resize(static_cast<size_t>(batch.num_rows));
    std::vector<float> logits(static_cast<size_t>(batch.num_rows));
    TJ_RETURN_IF_ERROR(model_.Logits(batch, pulled.ids, pulled.rows, pulled.bias, logits));
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
    float bias = 0;
  };
  absl::StatusOr<Pulled> PullParams(const Batch& batch, const ShardedPsClient& ps) const {
    Pulled pulled;
    TJ_ASSIGN_OR_RETURN(pulled.ids, DedupIds(batch));
    const SparseLookup lookup{kCtrTable, pulled.ids.unique};
    TJ_ASSIGN_OR_RETURN(std::vector<v1::Tensor> rows, ps.Lookup({&lookup, 1}));
    TJ_ASSIGN_OR_RETURN(pulled.rows, FloatsOf(rows[0]));
    TJ_ASSIGN_OR_RETURN(std::vector<v1::Tensor> bias, ps.Pull({kCtrBias}));
    TJ_ASSIGN_OR_RETURN(std::vector<float> bias_values, FloatsOf(bias[0]));
    pulled.bias = bias_values.at(0);
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

absl::StatusOr<std::unique_ptr<ModelKernel>> MakeModelKernel(const TrainConfig& config,
                                                             int64_t dim, int32_t num_classes) {
  if (config.model == "softmax") {
    if (dim < 1 || num_classes < 2) {
      return absl::InvalidArgumentError(Cat("softmax needs features and at least 2 classes; the "
                                            "data has ", dim, " features and ", num_classes,
                                            " classes"));
    }
    return std::unique_ptr<ModelKernel>(new SoftmaxKernel(config, dim, num_classes));
  }
  const bool fm = config.model == "fm";
  TJ_ASSIGN_OR_RETURN(CtrModel model,
                      CtrModel::Create(fm ? CtrModelType::kFactorizationMachine
                                          : CtrModelType::kLogisticRegression,
                                       fm ? config.factor_dim : 0));
  return std::unique_ptr<ModelKernel>(new CtrKernel(config, std::move(model)));
}

}  // namespace tj::train
