// Sparse requests as a PS receives them (protobuf LookupRequest and PushSparseRequest, parsed by
// gRPC's generated code) against a real VariableStore holding two tables: the first byte picks
// the request kind, the rest is the message.
#include <cstddef>
#include <cstdint>

#include "coordinator/ps/variable_store.h"

namespace {

std::unique_ptr<tj::VariableStore> NewStore() {
  auto store = std::make_unique<tj::VariableStore>();
  tj::v1::CreateVariablesRequest create;
  for (const auto& [name, dim] : {std::pair{"emb", 4}, std::pair{"wide", 64}}) {
    tj::v1::TableSpec* table = create.add_tables();
    table->set_name(name);
    table->set_dim(dim);
    table->mutable_optimizer()->mutable_sgd()->set_learning_rate(0.1f);
  }
  if (!store->Create(create).ok()) __builtin_trap();
  return store;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // A fresh store per input: rows a lookup creates do not accumulate across inputs.
  std::unique_ptr<tj::VariableStore> store = NewStore();
  const char* message = reinterpret_cast<const char*>(data) + 1;
  const int length = static_cast<int>(size - 1);
  if (data[0] % 2 == 0) {
    tj::v1::LookupRequest request;
    if (!request.ParseFromArray(message, length)) return 0;
    tj::v1::LookupResponse response;
    (void)store->Lookup(request, response);
  } else {
    tj::v1::PushSparseRequest request;
    if (!request.ParseFromArray(message, length)) return 0;
    (void)store->PushSparse(request);
  }
  return 0;
}
