// ProgressDisplay: what `tjctl run` prints while a job runs. On a terminal, one status line
// redrawn in place (state, step/total with a bar, loss, examples/s, metrics, restarts, elapsed)
// with event lines (replica starts, exits, restart decisions, phase changes) scrolling above it.
// Otherwise (a pipe, a CI log) the same status as a plain line, only when it changed and at most
// every 5 s, plus the event lines. Quiet: only the final result.
#pragma once

#include <cstdio>
#include <optional>
#include <string>

#include "absl/time/time.h"
#include "api/v1alpha1/training_progress.h"

namespace tj::local {

enum class DisplayMode { kTerminal, kPlain, kQuiet };

struct DisplaySnapshot {
  std::string phase;  // JobPhaseName
  std::optional<v1alpha1::TrainingProgress> progress;
  int32_t restarts = 0;  // counted toward backoffLimit
  absl::Duration elapsed;
  // Set for the final line: the job's time split over its coordinators.
  std::optional<v1alpha1::TimeSplit> goodput = std::nullopt;
};

// "Running | training 1200/2000 [#########.........] 60% | loss 0.3412 | 1234 ex/s |
//  accuracy 0.912 auc 0.950 | restarts 1 | goodput 93.1% (lost 4.0s startup, 2.5s restart) |
//  1m02s"; `with_elapsed` false drops the last part; goodput only when the snapshot has it.
// Lower `detail` makes it shorter for a narrow terminal: 1 drops the metrics, 0 also examples/s.
std::string FormatStatusLine(const DisplaySnapshot& snapshot, bool with_elapsed = true,
                             int detail = 2);
// "12s", "3m07s", "1h02m03s".
std::string FormatElapsed(absl::Duration elapsed);

class ProgressDisplay {
 public:
  ProgressDisplay(DisplayMode mode, std::FILE* out,
                  absl::Duration plain_interval = absl::Seconds(5));

  DisplayMode mode() const { return mode_; }
  // A line for something that happened, prefixed with the time since the start.
  void Event(absl::Duration elapsed, const std::string& text);
  // The current status: redrawn on a terminal; on plain output printed when it changed and the
  // last one is at least plain_interval old.
  void Update(const DisplaySnapshot& snapshot);
  // The final lines, printed in every mode (the status line is cleared first).
  void Result(const std::string& text);

 private:
  void ClearStatusLine();
  int TerminalWidth() const;

  DisplayMode mode_;
  std::FILE* out_;
  absl::Duration plain_interval_;
  std::string status_line_;  // what the terminal shows now
  std::string last_plain_;   // the last plain status printed, without elapsed time
  std::optional<absl::Time> last_plain_time_;
};

}  // namespace tj::local
