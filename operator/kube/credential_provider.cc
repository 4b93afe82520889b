#include "operator/kube/credential_provider.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "coordinator/base/std_mutex.h"

namespace tj::kube {

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read token file \"", path, "\""));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string token = ss.str();
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  return token;
}

TokenFileProvider::TokenFileProvider(std::string path, std::string initial_token,
                                     absl::Duration reread_interval, Clock clock)
    : path_(std::move(path)),
      reread_interval_(reread_interval),
      clock_(std::move(clock)),
      token_(std::move(initial_token)) {
  if (!token_.empty()) read_at_ = clock_();
}

absl::StatusOr<Credential> TokenFileProvider::Current() {
  StdMutexLock lock(mu_);
  const absl::Time now = clock_();
  if (now - read_at_ >= reread_interval_) {
    absl::StatusOr<std::string> token = ReadTokenFile(path_);
    if (token.ok() && !token->empty()) {
      token_ = *token;
    } else if (token_.empty()) {
      // Nothing to fall back on: say why.
      return token.ok()
                 ? absl::UnauthenticatedError(absl::StrCat("token file \"", path_, "\" is empty"))
                 : token.status();
    }
    read_at_ = now;  // keep the old token while the file is briefly unreadable (being rotated)
  }
  return Credential{.token = token_};
}

bool TokenFileProvider::Invalidate() {
  StdMutexLock lock(mu_);
  read_at_ = absl::InfinitePast();
  return true;
}

std::string TokenFileProvider::Describe() const {
  return absl::StrCat("token file \"", path_, "\"");
}

}  // namespace tj::kube
