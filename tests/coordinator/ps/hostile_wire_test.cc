// Hostile bytes against the PS's hand-written wire decoders: a message that declares more than it
// holds is refused before anything is allocated for it, lengths near SIZE_MAX do not overflow, and
// the real server answers INVALID_ARGUMENT (never UNKNOWN from an escaped exception). This binary
// replaces operator new (tests/support/allocation_counter) to see the largest allocation.
#include <gmock/gmock.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "coordinator/base/job_token.h"
#include "coordinator/ps/dense_wire.h"
#include "coordinator/ps/proto_wire.h"
#include "coordinator/ps/ps_channel.h"
#include "coordinator/ps/ps_client.h"
#include "coordinator/ps/ps_server.h"
#include "coordinator/ps/variable_store.h"
#include "tests/support/allocation_counter.h"

namespace tj {
namespace {

using ::testing::HasSubstr;
using tj::testing::LargestAllocationSinceReset;
using tj::testing::ResetLargestAllocation;

constexpr size_t kSmall = size_t{1} << 20;  // what decoding a few bytes may allocate at most

std::string Varint(uint64_t value) {
  std::string out;
  proto_wire::AppendVarint(value, out);
  return out;
}

// Field `field`, length-delimited, declaring `declared` bytes and holding none of them.
std::string DeclaringField(uint32_t field, uint64_t declared) {
  std::string out;
  proto_wire::AppendTag(field, proto_wire::kLengthDelimited, out);
  out += Varint(declared);
  return out;
}

grpc::ByteBuffer Buffer(const std::string& bytes) {
  grpc::Slice slice(bytes.data(), bytes.size());
  return grpc::ByteBuffer(&slice, 1);
}

// A real PS on 127.0.0.1 protected by a job token, called with raw bytes through a generic call.
class HostilePushTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetJobTokenForTesting("hostile-test-token");
    auto server = PsServer::Start("127.0.0.1:0", 0);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    channel_ = MakePsChannel(server_->address());
  }
  void TearDown() override {
    server_.reset();
    SetJobTokenForTesting(std::nullopt);
  }

  grpc::Status Call(const char* method, const std::string& body) {
    grpc::internal::RpcMethod rpc(method, grpc::internal::RpcMethod::NORMAL_RPC, channel_);
    grpc::ByteBuffer request = Buffer(body);
    grpc::ByteBuffer response;
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    return grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
        channel_.get(), rpc, &context, request, &response);
  }

  std::unique_ptr<PsServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(HostilePushTest, APushDeclaring768MiBOfNameIsRefusedWithoutAllocatingIt) {
  const std::string body = DeclaringField(1, size_t{768} << 20);
  ASSERT_LE(body.size(), 6u);
  ResetLargestAllocation();

  grpc::Status status = Call(kPsPushMethod, body);

  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("malformed PushRequest"));
  EXPECT_LT(LargestAllocationSinceReset(), kSmall);
}

TEST_F(HostilePushTest, LengthsNearSizeMaxAreInvalidArgumentNotAnEscapedException) {
  for (uint64_t declared :
       {uint64_t{SIZE_MAX}, uint64_t{SIZE_MAX} - 1, uint64_t{1} << 62, uint64_t{1} << 40}) {
    for (uint32_t field : {1u, 2u, 7u}) {  // a name, a delta, an unknown field
      SCOPED_TRACE(::testing::Message() << "field " << field << " declaring " << declared);
      ResetLargestAllocation();
      grpc::Status status = Call(kPsPushMethod, DeclaringField(field, declared));
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
      EXPECT_LT(LargestAllocationSinceReset(), kSmall);
    }
  }
}

TEST_F(HostilePushTest, ADeltaWhoseDataOverrunsTheMessageIsRefused) {
  // A delta of 3 bytes holding a data field that declares 1 GiB.
  std::string tensor = DeclaringField(3, uint64_t{1} << 30);
  std::string body = DeclaringField(2, tensor.size()) + tensor;
  ResetLargestAllocation();

  grpc::Status status = Call(kPsPushMethod, body);

  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  EXPECT_LT(LargestAllocationSinceReset(), kSmall);
}

TEST_F(HostilePushTest, ServerStillServesAfterHostileCalls) {
  ASSERT_EQ(Call(kPsPushMethod, DeclaringField(1, SIZE_MAX)).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  auto client = PsClient::Connect(server_->address(), 0);
  EXPECT_TRUE(client->Health().ok());
}

TEST(HostileWireTest, APullResponseDeclaringHugeDataIsRefusedWithoutAllocatingIt) {
  for (uint64_t declared : {uint64_t{768} << 20, uint64_t{SIZE_MAX}, uint64_t{SIZE_MAX} - 3}) {
    SCOPED_TRACE(declared);
    // One value whose tensor declares `declared` bytes of data, then nothing.
    std::string tensor = DeclaringField(3, declared);
    std::vector<v1::Tensor> values;
    ResetLargestAllocation();
    absl::Status decoded =
        DecodePullResponse(Buffer(DeclaringField(1, tensor.size()) + tensor), values);
    EXPECT_EQ(decoded.code(), absl::StatusCode::kInvalidArgument) << decoded;
    EXPECT_LT(LargestAllocationSinceReset(), kSmall);
    // The value itself declaring more than there is, and its data nearly as much.
    ResetLargestAllocation();
    decoded = DecodePullResponse(
        Buffer(DeclaringField(1, declared) + DeclaringField(3, declared >> 1)), values);
    EXPECT_EQ(decoded.code(), absl::StatusCode::kInvalidArgument) << decoded;
    EXPECT_LT(LargestAllocationSinceReset(), kSmall);
  }
}

TEST(HostileWireTest, ATensorOfTooManyDimensionsIsRefused) {
  std::string shape;
  for (int i = 0; i <= kMaxWireTensorRank; ++i) shape += Varint(1);
  std::string tensor = DeclaringField(2, shape.size()) + shape;
  std::vector<v1::Tensor> values;
  absl::Status decoded =
      DecodePullResponse(Buffer(DeclaringField(1, tensor.size()) + tensor), values);
  EXPECT_EQ(decoded.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(decoded.message()), HasSubstr("dimensions"));
}

TEST(HostileWireTest, APushOfTooManyNamesIsRefused) {
  std::string body;
  for (size_t i = 0; i <= kMaxWireEntries; ++i) body += DeclaringField(1, 0);
  absl::StatusOr<DecodedPush> push = DecodePushRequest(Buffer(body));
  ASSERT_FALSE(push.ok());
  EXPECT_EQ(push.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(push.status().message()), HasSubstr("names"));
}

TEST(HostileWireTest, ALookupWhoseAnswerWouldExceedTheLimitIsRefusedBeforeAllocating) {
  VariableStore store;
  v1::CreateVariablesRequest create;
  v1::TableSpec* table = create.add_tables();
  table->set_name("emb");
  table->set_dim(1 << 16);
  ASSERT_TRUE(store.Create(create).ok());
  // 2^15 ids of 2^18 bytes each: an 8 GiB answer to 256 KiB of ids.
  v1::LookupRequest request;
  v1::TableIds* ids = request.add_lookups();
  ids->set_table("emb");
  ids->mutable_ids()->assign(size_t{8} << 15, '\0');
  v1::LookupResponse response;
  ResetLargestAllocation();

  absl::Status looked_up = store.Lookup(request, response);

  EXPECT_EQ(looked_up.code(), absl::StatusCode::kInvalidArgument) << looked_up;
  EXPECT_THAT(std::string(looked_up.message()), HasSubstr("'emb'"));
  EXPECT_LT(LargestAllocationSinceReset(), kSmall);
}

}  // namespace
}  // namespace tj
