#include "tjctl/local/progress_display.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "jobcontrol/goodput.h"

namespace tj::local {
namespace {

constexpr int kBarWidth = 20;

std::string Bar(int64_t step, int64_t total) {
  const double fraction = std::clamp(static_cast<double>(step) / static_cast<double>(total), 0.0, 1.0);
  const int filled = static_cast<int>(std::floor(fraction * kBarWidth));
  return absl::StrCat("[", std::string(static_cast<size_t>(filled), '#'),
                      std::string(static_cast<size_t>(kBarWidth - filled), '.'), "] ",
                      static_cast<int>(std::floor(fraction * 100)), "%");
}

std::string Number(double v) {
  if (std::abs(v) >= 100) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.4g", v);
}

}  // namespace

std::string FormatElapsed(absl::Duration elapsed) {
  const int64_t s = std::max<int64_t>(0, absl::ToInt64Seconds(elapsed));
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm%02ds", s / 3600, (s / 60) % 60, s % 60);
}

std::string FormatStatusLine(const DisplaySnapshot& snapshot, bool with_elapsed, int detail) {
  std::string line = snapshot.phase;
  if (!snapshot.progress) {
    absl::StrAppend(&line, " | no progress reported yet");
  } else {
    const v1alpha1::TrainingProgress& p = *snapshot.progress;
    absl::StrAppend(&line, " | ", p.state, " ", p.step);
    if (p.total_steps > 0) absl::StrAppend(&line, "/", p.total_steps, " ", Bar(p.step, p.total_steps));
    if (p.loss) absl::StrAppend(&line, " | loss ", Number(*p.loss));
    if (p.examples_per_second && detail >= 1) absl::StrAppend(&line, " | ", Number(*p.examples_per_second), " ex/s");
    if (!p.metrics.empty() && detail >= 2) {
      absl::StrAppend(&line, " |");
      for (const auto& [name, value] : p.metrics) absl::StrAppend(&line, " ", name, " ", Number(value));
    }
  }
  absl::StrAppend(&line, " | restarts ", snapshot.restarts);
  if (snapshot.goodput) {
    if (std::optional<double> ratio = GoodputRatio(*snapshot.goodput)) {
      absl::StrAppend(&line, " | goodput ", absl::StrFormat("%.1f%%", *ratio * 100));
      std::string lost;
      for (v1alpha1::LostCause cause : v1alpha1::kLostCauses) {
        const double seconds = snapshot.goodput->lost_by(cause);
        if (seconds < 0.05) continue;
        absl::StrAppend(&lost, lost.empty() ? " (lost " : ", ", absl::StrFormat("%.1fs ", seconds),
                        std::string(v1alpha1::LostCauseLabel(cause)));
      }
      if (!lost.empty()) absl::StrAppend(&line, lost, ")");
    }
  }
  if (with_elapsed) absl::StrAppend(&line, " | ", FormatElapsed(snapshot.elapsed));
  return line;
}

ProgressDisplay::ProgressDisplay(DisplayMode mode, std::FILE* out, absl::Duration plain_interval)
    : mode_(mode), out_(out), plain_interval_(plain_interval) {}

int ProgressDisplay::TerminalWidth() const {
  winsize ws{};
  if (ioctl(fileno(out_), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 100;
}

void ProgressDisplay::ClearStatusLine() {
  if (mode_ == DisplayMode::kTerminal && !status_line_.empty()) {
    std::fputs("\r\033[K", out_);
    status_line_.clear();
  }
}

void ProgressDisplay::Event(absl::Duration elapsed, const std::string& text) {
  if (mode_ == DisplayMode::kQuiet) return;
  const std::string redraw = status_line_;
  ClearStatusLine();
  std::fprintf(out_, "[%7.1fs] %s\n", absl::ToDoubleSeconds(elapsed), text.c_str());
  if (!redraw.empty()) {
    std::fputs(redraw.c_str(), out_);
    status_line_ = redraw;
  }
  std::fflush(out_);
}

void ProgressDisplay::Update(const DisplaySnapshot& snapshot) {
  if (mode_ == DisplayMode::kQuiet) return;
  if (mode_ == DisplayMode::kTerminal) {
    // A wrapped line cannot be redrawn with \r: drop details, then cut.
    const size_t width = static_cast<size_t>(std::max(TerminalWidth() - 1, 10));
    std::string line;
    for (int detail = 2; detail >= 0; --detail) {
      line = FormatStatusLine(snapshot, /*with_elapsed=*/true, detail);
      if (line.size() <= width) break;
    }
    if (line.size() > width) line.resize(width);
    if (line == status_line_) return;
    std::fputs("\r\033[K", out_);
    std::fputs(line.c_str(), out_);
    status_line_ = line;
    std::fflush(out_);
    return;
  }
  const std::string key = FormatStatusLine(snapshot, /*with_elapsed=*/false);
  const absl::Time now = absl::Now();
  if (key == last_plain_) return;
  if (last_plain_time_ && now - *last_plain_time_ < plain_interval_) return;
  std::fprintf(out_, "[%7.1fs] %s\n", absl::ToDoubleSeconds(snapshot.elapsed),
               FormatStatusLine(snapshot, /*with_elapsed=*/false).c_str());
  std::fflush(out_);
  last_plain_ = key;
  last_plain_time_ = now;
}

void ProgressDisplay::Result(const std::string& text) {
  ClearStatusLine();
  std::fputs(text.c_str(), out_);
  if (!text.empty() && text.back() != '\n') std::fputc('\n', out_);
  std::fflush(out_);
}

}  // namespace tj::local
