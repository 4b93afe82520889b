// CreationExpectations: the bookkeeping that keeps a reconcile from creating again what it
// already asked for while the informers have not shown it yet.
#include "operator/controller/expectations.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tj::op {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'800'000'000);
constexpr char kJob[] = "ml/digits";

struct Step {
  enum Kind { kExpect, kObserve } kind;
  std::vector<std::string> objects;  // Expect: all; Observe: the one
  absl::Duration at;                 // after kT0
  Observation returned = Observation::kNotAwaited;  // Observe
};

struct Case {
  std::string name;
  std::vector<Step> steps;
  absl::Duration checked_at;
  bool satisfied;
  std::vector<std::string> pending;
};

TEST(CreationExpectationsTest, Table) {
  const absl::Duration s = absl::Seconds(1);
  const std::vector<Case> cases = {
      {"nothing expected is satisfied", {}, 0 * s, true, {}},
      {"expected and not observed",
       {{Step::kExpect, {"pods/a", "pods/b"}, 0 * s}},
       1 * s,
       false,
       {"pods/a", "pods/b"}},
      {"one of two observed",
       {{Step::kExpect, {"pods/a", "pods/b"}, 0 * s},
        {Step::kObserve, {"pods/a"}, 1 * s, Observation::kAwaiting}},
       2 * s,
       false,
       {"pods/b"}},
      {"all observed, the last one says so",
       {{Step::kExpect, {"pods/a", "services/a"}, 0 * s},
        {Step::kObserve, {"services/a"}, 1 * s, Observation::kAwaiting},
        {Step::kObserve, {"pods/a"}, 1 * s, Observation::kSatisfied}},
       2 * s,
       true,
       {}},
      {"an object nobody waits for changes nothing",
       {{Step::kExpect, {"pods/a"}, 0 * s}, {Step::kObserve, {"pods/z"}, 1 * s}},
       2 * s,
       false,
       {"pods/a"}},
      {"the same object observed twice counts once",
       {{Step::kExpect, {"pods/a", "pods/b"}, 0 * s},
        {Step::kObserve, {"pods/a"}, 1 * s, Observation::kAwaiting},
        {Step::kObserve, {"pods/a"}, 1 * s, Observation::kNotAwaited}},
       2 * s,
       false,
       {"pods/b"}},
      {"a pod and a service of the same name are different objects",
       {{Step::kExpect, {"pods/a", "services/a"}, 0 * s},
        {Step::kObserve, {"pods/a"}, 1 * s, Observation::kAwaiting}},
       2 * s,
       false,
       {"services/a"}},
      {"still waiting just under the TTL",
       {{Step::kExpect, {"pods/a"}, 0 * s}},
       absl::Minutes(5),
       false,
       {"pods/a"}},
      {"expired past the TTL: satisfied (a lost event does not stall the job)",
       {{Step::kExpect, {"pods/a"}, 0 * s}},
       absl::Minutes(5) + s,
       true,
       {"pods/a"}},
      {"a new expectation replaces an expired one",
       {{Step::kExpect, {"pods/a"}, 0 * s}, {Step::kExpect, {"pods/b"}, absl::Minutes(6)}},
       absl::Minutes(6) + s,
       false,
       {"pods/b"}},
      {"expecting nothing clears",
       {{Step::kExpect, {"pods/a"}, 0 * s}, {Step::kExpect, {}, 1 * s}},
       2 * s,
       true,
       {}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    CreationExpectations expectations;
    for (const Step& step : c.steps) {
      if (step.kind == Step::kExpect) {
        expectations.Expect(kJob, step.objects, kT0 + step.at);
      } else {
        EXPECT_EQ(expectations.Observed(kJob, step.objects.front()), step.returned);
      }
    }
    EXPECT_EQ(expectations.Satisfied(kJob, kT0 + c.checked_at), c.satisfied);
    EXPECT_EQ(expectations.Pending(kJob), c.pending);
  }
}

TEST(CreationExpectationsTest, JobsAreIndependentAndForgotten) {
  CreationExpectations expectations(absl::Minutes(1));
  expectations.Expect("ml/a", {"pods/a-ps-0"}, kT0);
  expectations.Expect("ml/b", {"pods/b-ps-0"}, kT0);
  EXPECT_EQ(expectations.Observed("ml/b", "pods/a-ps-0"), Observation::kNotAwaited)
      << "another job's pod of that name";
  EXPECT_FALSE(expectations.Satisfied("ml/a", kT0));
  EXPECT_EQ(expectations.ExpiresAt("ml/a"), kT0 + absl::Minutes(1));
  expectations.Forget("ml/a");
  EXPECT_TRUE(expectations.Satisfied("ml/a", kT0));
  EXPECT_EQ(expectations.ExpiresAt("ml/a"), std::nullopt);
  EXPECT_FALSE(expectations.Satisfied("ml/b", kT0));
  EXPECT_EQ(expectations.Observed("ml/b", "pods/b-ps-0"), Observation::kSatisfied);
  EXPECT_TRUE(expectations.Satisfied("ml/b", kT0));
}

}  // namespace
}  // namespace tj::op
