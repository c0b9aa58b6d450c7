#include "sys/clock.hpp"

#include <poll.h>
#include <time.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

#include "sys/environment.hpp"
#include "sys/signal_watch.hpp"
#include "util/strings.hpp"

namespace gpubind::sys {

const Clock& steady_clock() {
  struct Steady final : Clock {
    time_point now() const override { return std::chrono::steady_clock::now(); }
    void sleep_for(std::chrono::milliseconds d) const override { std::this_thread::sleep_for(d); }
  };
  static const Steady clock;
  return clock;
}

std::string utc_timestamp() {
  struct timespec now {};
  clock_gettime(CLOCK_REALTIME, &now);
  if (auto fixed = env_value("SOURCE_DATE_EPOCH"))
    if (auto seconds = parse_uint(*fixed); seconds && *seconds < (uint64_t(1) << 40)) now = {time_t(*seconds), 0};
  struct tm utc {};
  gmtime_r(&now.tv_sec, &utc);
  char text[96];  // room for any int the format could see
  std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour,
                utc.tm_min, utc.tm_sec, int(now.tv_nsec / 1000000));
  return text;
}

Result<std::unique_ptr<InterruptibleClock>> InterruptibleClock::create() {
  auto watch = SignalWatch::create({SIGINT, SIGTERM, SIGHUP});
  if (!watch) return watch.error();
  return std::unique_ptr<InterruptibleClock>(new InterruptibleClock(std::make_unique<SignalWatch>(std::move(*watch))));
}

InterruptibleClock::InterruptibleClock(std::unique_ptr<SignalWatch> watch) : m_watch(std::move(watch)) {}

InterruptibleClock::~InterruptibleClock() = default;

Clock::time_point InterruptibleClock::now() const { return std::chrono::steady_clock::now(); }

void InterruptibleClock::sleep_for(std::chrono::milliseconds d) const {
  if (m_signal) return;
  auto until = now() + d;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - now()).count();
    pollfd p{m_watch->fd(), POLLIN, 0};
    int r = ::poll(&p, 1, int(std::clamp<long long>(left, 0, 1000000)));
    if (r > 0)
      if (std::vector<int> got = m_watch->drain(); !got.empty()) {
        m_signal = got.front();
        return;
      }
    if (r == 0 || left <= 0) return;
    // EINTR (a signal outside the set): wait out the rest.
  }
}

}  // namespace gpubind::sys
