#include "coordinator/base/coordinator_generation.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "coordinator/base/process_slot.h"
#include "coordinator/base/wire_status.h"

namespace tj {
namespace {

ProcessSlot<uint64_t>& GenerationSlot() {
  static ProcessSlot<uint64_t> slot;
  return slot;
}

class GenerationInterceptor : public grpc::experimental::Interceptor {
 public:
  explicit GenerationInterceptor(std::string value) : value_(std::move(value)) {}
  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::PRE_SEND_INITIAL_METADATA)) {
      methods->GetSendInitialMetadata()->insert({kCoordinatorGenerationHeader, value_});
    }
    methods->Proceed();
  }

 private:
  const std::string value_;
};

class GenerationInterceptorFactory : public grpc::experimental::ClientInterceptorFactoryInterface {
 public:
  explicit GenerationInterceptorFactory(std::string value) : value_(std::move(value)) {}
  grpc::experimental::Interceptor* CreateClientInterceptor(
      grpc::experimental::ClientRpcInfo*) override {
    return new GenerationInterceptor(value_);
  }

 private:
  const std::string value_;
};

}  // namespace

absl::StatusOr<uint64_t> LoadCoordinatorGenerationFromEnvironment() {
  const char* text = std::getenv(kCoordinatorGenerationEnv);
  if (text == nullptr || *text == '\0') return 0;
  uint64_t generation = 0;
  if (!absl::SimpleAtoi(text, &generation)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kCoordinatorGenerationEnv, "=", text, ": not a non-negative decimal number"));
  }
  return generation;
}

uint64_t CoordinatorGeneration() {
  return GenerationSlot().Get([] {
    auto loaded = LoadCoordinatorGenerationFromEnvironment();
    if (!loaded.ok()) {
      spdlog::critical("{}", loaded.status().ToString());
      std::exit(2);
    }
    return *loaded;
  });
}

void SetCoordinatorGenerationForTesting(uint64_t generation) { GenerationSlot().Set(generation); }

uint64_t NextCoordinatorGeneration(uint64_t previous) {
  const auto now_ms = static_cast<uint64_t>(std::max<int64_t>(absl::ToUnixMillis(absl::Now()), 0));
  return std::max(previous + 1, now_ms);
}

std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>>
CoordinatorGenerationInterceptors() {
  std::vector<std::unique_ptr<grpc::experimental::ClientInterceptorFactoryInterface>> out;
  if (const uint64_t generation = CoordinatorGeneration(); generation != 0) {
    out.push_back(std::make_unique<GenerationInterceptorFactory>(absl::StrCat(generation)));
  }
  return out;
}

absl::StatusOr<uint64_t> CallGeneration(const grpc::ServerContext& context) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(kCoordinatorGenerationHeader);
  if (it == metadata.end()) return 0;
  const absl::string_view text(it->second.data(), it->second.size());
  uint64_t generation = 0;
  if (!absl::SimpleAtoi(text, &generation)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kCoordinatorGenerationHeader, " \"", text, "\" is not a decimal number"));
  }
  return generation;
}

absl::Status GenerationFence::Admit(uint64_t generation, absl::string_view what) {
  StdMutexLock lock(mu_);
  if (generation < newest_) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " refused: it comes from coordinator generation ", generation,
                     ", older than generation ", newest_,
                     ", which this server has seen: a newer "
                     "coordinator took over"));
  }
  newest_ = generation;
  return absl::OkStatus();
}

grpc::Status GenerationFence::Admit(const grpc::ServerContext& context, absl::string_view what) {
  absl::StatusOr<uint64_t> generation = CallGeneration(context);
  if (!generation.ok()) return ToGrpc(generation.status());
  return ToGrpc(Admit(*generation, what));
}

void GenerationFence::Raise(uint64_t generation) {
  StdMutexLock lock(mu_);
  newest_ = std::max(newest_, generation);
}

uint64_t GenerationFence::newest() const {
  StdMutexLock lock(mu_);
  return newest_;
}

}  // namespace tj
