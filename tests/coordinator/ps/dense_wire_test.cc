// The zero-copy Pull/Push encoding (dense_wire.h) against the generated protobuf code: what one
// side writes the other parses, whatever the slicing, and malformed bytes are errors, never
// crashes. Also the copy-on-write that lets a pull send from a variable's own memory.
#include "coordinator/ps/dense_wire.h"

#include <gmock/gmock.h>
#include <google/protobuf/descriptor.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "coordinator/base/values.h"
#include "coordinator/ps/optimizer.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/ps/variable_store.h"
#include "tests/coordinator/ps/ps_test_values.h"
#include "tj/v1/ps.grpc.pb.h"

namespace tj {
namespace {

using testing::CreateRequest;
using testing::Floats;
using testing::FloatVariable;
using ::testing::HasSubstr;

std::vector<float> Ramp(size_t n, float start = 0.0f) {
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = start + static_cast<float>(i);
  return values;
}

std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

// `bytes` cut into slices of the sizes in `pattern`, repeated: floats and varints end up split
// across slice boundaries at every offset.
grpc::ByteBuffer Sliced(const std::string& bytes, std::vector<size_t> pattern) {
  std::vector<grpc::Slice> slices;
  size_t at = 0;
  for (size_t i = 0; at < bytes.size(); ++i) {
    const size_t n = std::min(pattern[i % pattern.size()], bytes.size() - at);
    slices.emplace_back(bytes.data() + at, n);
    at += n;
  }
  if (slices.empty()) slices.emplace_back();
  return grpc::ByteBuffer(slices.data(), slices.size());
}

PulledValue Pinned(const std::vector<float>& values, std::vector<int64_t> shape) {
  std::shared_ptr<FloatBuffer> buffer = FloatBuffer::Allocate(values.size());
  // memcpy's pointers must not be null even for 0 bytes (UBSan), and an empty vector's may be.
  if (!values.empty()) std::memcpy(buffer->data(), values.data(), values.size() * sizeof(float));
  return PulledValue{.spec = TensorSpec{.dtype = v1::DTYPE_FLOAT32, .shape = std::move(shape)},
                     .values = PinnedFloats(buffer)};
}

TEST(DenseWireTest, MethodNamesAreTheGeneratedServicesOnes) {
  const auto* service = google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(
      v1::ParameterServer::service_full_name());
  ASSERT_NE(service, nullptr);
  EXPECT_EQ(kPsPullMethod,
            "/" + service->full_name() + "/" + service->FindMethodByName("Pull")->name());
  EXPECT_EQ(kPsPushMethod,
            "/" + service->full_name() + "/" + service->FindMethodByName("Push")->name());
}

TEST(DenseWireTest, AnEncodedPullResponseIsAPullResponse) {
  // One value small enough to be copied into the framing, one large enough to be sent in place,
  // one empty.
  const std::vector<float> small = Ramp(5);
  const std::vector<float> large = Ramp(40'000, 7.0f);
  std::vector<PulledValue> values;
  values.push_back(Pinned(small, {5}));
  values.push_back(Pinned(large, {200, 200}));
  values.push_back(Pinned({}, {0, 3}));
  v1::PullResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(Flatten(EncodePullResponse(std::move(values)))));
  ASSERT_EQ(parsed.values_size(), 3);
  EXPECT_EQ(Floats(parsed.values(0)), small);
  EXPECT_THAT(parsed.values(1).shape(), ::testing::ElementsAre(200, 200));
  EXPECT_EQ(parsed.values(1).dtype(), v1::DTYPE_FLOAT32);
  EXPECT_EQ(Floats(parsed.values(1)), large);
  EXPECT_THAT(parsed.values(2).shape(), ::testing::ElementsAre(0, 3));
  EXPECT_TRUE(parsed.values(2).data().empty());
}

TEST(DenseWireTest, APullResponseDecodesHoweverItIsSliced) {
  v1::PullResponse response;
  *response.add_values() = FloatTensor(Ramp(1000), {10, 100});
  *response.add_values() = FloatTensor(Ramp(3, -1.5f), {3});
  const std::string bytes = response.SerializeAsString();
  for (const std::vector<size_t>& pattern :
       std::vector<std::vector<size_t>>{{bytes.size()}, {1}, {3, 5, 7}, {4096, 1, 2}}) {
    std::vector<v1::Tensor> values;
    ASSERT_TRUE(DecodePullResponse(Sliced(bytes, pattern), values).ok());
    ASSERT_EQ(values.size(), 2u);
    EXPECT_EQ(Floats(values[0]), Ramp(1000));
    EXPECT_THAT(values[0].shape(), ::testing::ElementsAre(10, 100));
    EXPECT_EQ(Floats(values[1]), Ramp(3, -1.5f));
  }
}

TEST(DenseWireTest, DecodingAgainReusesTheCallersMemory) {
  v1::PullResponse response;
  *response.add_values() = FloatTensor(Ramp(100'000), {100'000});
  const std::string bytes = response.SerializeAsString();
  std::vector<v1::Tensor> values;
  ASSERT_TRUE(DecodePullResponse(Sliced(bytes, {65536}), values).ok());
  const char* first = values[0].data().data();
  *response.mutable_values(0) = FloatTensor(Ramp(100'000, 1.0f), {100'000});
  ASSERT_TRUE(DecodePullResponse(Sliced(response.SerializeAsString(), {65536}), values).ok());
  EXPECT_EQ(values[0].data().data(), first);
  EXPECT_EQ(Floats(values[0]), Ramp(100'000, 1.0f));
}

TEST(DenseWireTest, UnknownFieldsAreSkipped) {
  v1::Tensor tensor = FloatTensor(Ramp(4), {4});
  std::string bytes;
  {
    v1::PullResponse response;
    *response.add_values() = tensor;
    bytes = response.SerializeAsString();
  }
  // Field 9 (varint 300) and field 10 (length-delimited "xyz") appended at the top level, as a
  // newer server might send.
  bytes += std::string("\x48\xac\x02\x52\x03xyz", 8);
  std::vector<v1::Tensor> values;
  const absl::Status status = DecodePullResponse(Sliced(bytes, {2}), values);
  ASSERT_TRUE(status.ok()) << status;
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(Floats(values[0]), Ramp(4));
}

TEST(DenseWireTest, EveryTruncationIsAnErrorOrAShorterMessage) {
  v1::PullResponse pull;
  *pull.add_values() = FloatTensor(Ramp(20), {4, 5});
  *pull.add_values() = FloatTensor(Ramp(3), {3});
  const std::string pull_bytes = pull.SerializeAsString();
  for (size_t n = 0; n < pull_bytes.size(); ++n) {
    std::vector<v1::Tensor> values;
    const absl::Status status = DecodePullResponse(Sliced(pull_bytes.substr(0, n), {3}), values);
    // A cut between two values leaves a valid, shorter response; anywhere else it is malformed.
    if (status.ok()) {
      EXPECT_LT(values.size(), 2u) << "prefix of " << n;
    } else {
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(status.message(), HasSubstr("malformed PullResponse"));
    }
  }
  v1::PushRequest push = testing::PushRequest("w", FloatTensor(Ramp(20), {20}));
  const std::string push_bytes = push.SerializeAsString();
  for (size_t n = 0; n < push_bytes.size(); ++n) {
    absl::StatusOr<DecodedPush> decoded = DecodePushRequest(Sliced(push_bytes.substr(0, n), {5}));
    if (decoded.ok()) {
      EXPECT_TRUE(decoded->deltas.empty() ||
                  TotalBytes(decoded->deltas[0].data) < 20 * sizeof(float))
          << "prefix of " << n;
    } else {
      EXPECT_THAT(decoded.status().message(), HasSubstr("malformed PushRequest"));
    }
  }
}

TEST(DenseWireTest, GarbageIsAnError) {
  std::vector<v1::Tensor> values;
  // Field 1 length-delimited with a length far past the end; then a varint of eleven bytes.
  EXPECT_FALSE(
      DecodePullResponse(Sliced(std::string("\x0a\xff\xff\xff\x0f", 5), {1}), values).ok());
  EXPECT_FALSE(DecodePullResponse(Sliced(std::string(11, '\xff'), {4}), values).ok());
  // A group start tag (wire type 3) is not proto3.
  EXPECT_FALSE(DecodePushRequest(Sliced(std::string("\x0b", 1), {1})).ok());
}

TEST(DenseWireTest, AnEncodedPushRequestIsAPushRequestAndDecodesInPlace) {
  const std::vector<float> big = Ramp(50'000, 0.25f);
  const std::vector<float> small = Ramp(2);
  std::vector<v1::Tensor> deltas = {FloatTensor(big, {50'000}), FloatTensor(small, {2})};
  const grpc::ByteBuffer encoded = EncodePushRequest({"big", "small"}, std::move(deltas));
  const std::string bytes = Flatten(encoded);
  v1::PushRequest parsed;
  ASSERT_TRUE(parsed.ParseFromString(bytes));
  ASSERT_EQ(parsed.names_size(), 2);
  EXPECT_EQ(parsed.names(1), "small");
  EXPECT_EQ(Floats(parsed.deltas(0)), big);
  EXPECT_EQ(Floats(parsed.deltas(1)), small);

  // Decoded from odd slice sizes, the chunks still hold every float once, in order.
  absl::StatusOr<DecodedPush> decoded = DecodePushRequest(Sliced(bytes, {4093, 3, 6}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(decoded->names, (std::vector<std::string>{"big", "small"}));
  ASSERT_EQ(decoded->deltas.size(), 2u);
  EXPECT_THAT(decoded->deltas[0].header.shape(), ::testing::ElementsAre(50'000));
  EXPECT_GT(decoded->deltas[0].data.size(), 1u);
  std::vector<float> gathered(50'000, -1.0f);
  size_t calls = 0;
  ForEachElementRun<sizeof(float)>(decoded->deltas[0].data,
                                   [&](size_t first, const char* bytes, size_t n) {
                                     std::memcpy(gathered.data() + first, bytes, n * sizeof(float));
                                     ++calls;
                                   });
  EXPECT_EQ(gathered, big);
  EXPECT_GT(calls, decoded->deltas[0].data.size() / 2);  // split floats came as runs of one
}

TEST(DenseWireTest, ANonFiniteElementSplitAcrossChunksIsFoundAtItsIndex) {
  std::vector<float> values = Ramp(10);
  values[6] = std::numeric_limits<float>::quiet_NaN();
  const char* bytes = reinterpret_cast<const char*>(values.data());
  // Element 6 spans bytes 24..27: cut at 26.
  ByteChunks chunks = {{bytes, 26}, {bytes + 26, 14}};
  const absl::Status status = CheckFiniteGradient(chunks);
  EXPECT_THAT(status.message(), HasSubstr("element 6 is NaN"));
  values[6] = 1.0f;
  values[9] = std::numeric_limits<float>::infinity();
  EXPECT_THAT(CheckFiniteGradient(chunks).message(), HasSubstr("element 9 is infinite"));
  values[9] = 2.0f;
  EXPECT_TRUE(CheckFiniteGradient(chunks).ok());
}

TEST(DenseWireTest, APinnedPullIsNotChangedByLaterPushes) {
  VariableStore store;
  ASSERT_TRUE(store.Create(CreateRequest({FloatVariable("w", {1, 2, 3}, {3})})).ok());
  absl::StatusOr<std::vector<PulledValue>> pinned = store.PinForPull({"w"});
  ASSERT_TRUE(pinned.ok());
  ASSERT_TRUE(
      store.Push(testing::PushRequest("w", FloatTensor(std::vector<float>{10, 10, 10}, {3}))).ok());
  const float* snapshot = (*pinned)[0].values.data();
  EXPECT_EQ(std::vector<float>(snapshot, snapshot + 3), (std::vector<float>{1, 2, 3}));
  v1::PullResponse now;
  ASSERT_TRUE(store.Pull(testing::PullRequest({"w"}), now).ok());
  EXPECT_EQ(Floats(now.values(0)), (std::vector<float>{11, 12, 13}));
  pinned->clear();  // unpinned: the next push writes in place again
  ASSERT_TRUE(
      store.Push(testing::PushRequest("w", FloatTensor(std::vector<float>{1, 1, 1}, {3}))).ok());
  now.Clear();
  ASSERT_TRUE(store.Pull(testing::PullRequest({"w"}), now).ok());
  EXPECT_EQ(Floats(now.values(0)), (std::vector<float>{12, 13, 14}));
}

// A gradient in pieces, cut at odd byte offsets.
ChunkedTensor Chunked(const v1::Tensor& tensor, std::vector<size_t> cuts) {
  ChunkedTensor chunked;
  chunked.header = tensor;
  chunked.header.clear_data();
  size_t at = 0;
  for (size_t cut : cuts) {
    chunked.data.emplace_back(tensor.data().data() + at, cut - at);
    at = cut;
  }
  chunked.data.emplace_back(tensor.data().data() + at, tensor.data().size() - at);
  return chunked;
}

TEST(DenseWireTest, ChunkedPushesUpdateExactlyAsWholeOnesAndAreAllOrNothing) {
  // assign_add and SGD (updated out of place, checked in the same pass) and Adagrad (checked,
  // then updated in place): the same results as the protobuf path, bit for bit.
  auto make_store = [] {
    auto store = std::make_unique<VariableStore>();
    v1::CreateVariablesRequest create =
        CreateRequest({FloatVariable("add", Ramp(10), {10}), FloatVariable("sgd", Ramp(10), {10}),
                       FloatVariable("ada", Ramp(10), {10})});
    *create.mutable_variables(1)->mutable_optimizer() = testing::SgdOptimizer(0.1f);
    *create.mutable_variables(2)->mutable_optimizer() = testing::AdagradOptimizer(0.1f);
    EXPECT_TRUE(store->Create(create).ok());
    return store;
  };
  const v1::Tensor grad = FloatTensor(Ramp(10, 0.3f), {10});
  std::unique_ptr<VariableStore> whole = make_store();
  std::unique_ptr<VariableStore> chunked = make_store();
  for (const std::string name : {"add", "sgd", "ada"}) {
    ASSERT_TRUE(whole->Push(testing::PushRequest(name, grad)).ok());
  }
  ASSERT_TRUE(chunked
                  ->Push({"add", "sgd"}, {Chunked(grad, {3, 17}), Chunked(grad, {1, 2, 39})})
                  .ok());
  ASSERT_TRUE(chunked->Push({"ada"}, {Chunked(grad, {6})}).ok());
  for (const std::string name : {"add", "sgd", "ada"}) {
    v1::PullResponse a, b;
    ASSERT_TRUE(whole->Pull(testing::PullRequest({name}), a).ok());
    ASSERT_TRUE(chunked->Pull(testing::PullRequest({name}), b).ok());
    EXPECT_EQ(a.values(0).data(), b.values(0).data()) << name;
  }

  // A NaN in the second variable's gradient (split across pieces): an error naming it and its
  // element, and the first variable is not updated either.
  std::vector<float> bad = Ramp(10);
  bad[4] = std::numeric_limits<float>::quiet_NaN();
  const v1::Tensor bad_grad = FloatTensor(bad, {10});
  v1::PullResponse before;
  ASSERT_TRUE(chunked->Pull(testing::PullRequest({"add", "sgd"}), before).ok());
  const absl::Status refused =
      chunked->Push({"add", "sgd"}, {Chunked(grad, {}), Chunked(bad_grad, {18})});
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("'sgd'"));
  EXPECT_THAT(refused.message(), HasSubstr("element 4 is NaN"));
  v1::PullResponse after;
  ASSERT_TRUE(chunked->Pull(testing::PullRequest({"add", "sgd"}), after).ok());
  EXPECT_EQ(before.SerializeAsString(), after.SerializeAsString());
  // The same variable twice in one push is applied twice (in place, one after the other).
  ASSERT_TRUE(chunked->Push({"add", "add"}, {Chunked(grad, {}), Chunked(grad, {})}).ok());
}

TEST(DenseWireTest, PullsDuringPushesSeeWholeUpdatesOnly) {
  // Every push adds 1 to every element, so a pull that saw half an update would hold two values.
  auto server = PsServer::Start("127.0.0.1:0", 0);
  ASSERT_TRUE(server.ok()) << server.status();
  std::unique_ptr<PsClient> client = PsClient::Connect((*server)->address(), 0);
  constexpr size_t kElements = 1 << 20;
  ASSERT_TRUE(client
                  ->CreateVariables({FloatVariable("w", std::vector<float>(kElements, 0.0f),
                                                   {static_cast<int64_t>(kElements)})})
                  .ok());
  constexpr int kPushes = 30;
  std::atomic<bool> pushing{true};
  std::thread pusher([&] {
    for (int i = 0; i < kPushes; ++i) {
      ASSERT_TRUE(client
                      ->Push({"w"}, {FloatTensor(std::vector<float>(kElements, 1.0f),
                                                 {static_cast<int64_t>(kElements)})})
                      .ok());
    }
    pushing = false;
  });
  std::vector<v1::Tensor> values;
  float last = 0;
  int pulls = 0;
  while (pushing || pulls == 0) {
    ASSERT_TRUE(client->PullInto({"w"}, values).ok());
    const std::vector<float> got = Floats(values[0]);
    ASSERT_EQ(got.size(), kElements);
    ASSERT_TRUE(std::all_of(got.begin(), got.end(), [&](float v) { return v == got[0]; }))
        << "a pull saw a torn update at pull " << pulls;
    EXPECT_GE(got[0], last);
    last = got[0];
    ++pulls;
  }
  pusher.join();
  ASSERT_TRUE(client->PullInto({"w"}, values).ok());
  EXPECT_EQ(Floats(values[0])[kElements - 1], static_cast<float>(kPushes));
}

}  // namespace
}  // namespace tj
