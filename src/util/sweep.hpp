#pragma once
// Caches of per-thread state (watch's kept files, perf counters, stat memo) live as long as their
// thread: each entry is marked `used` when read, and a sweep after every sample drops the others.
namespace gpubind {

// Erases the entries of `map` not marked used since the last sweep, calling `release` on each
// first; unmarks the rest.
template <class Map, class Release>
void sweep_unused(Map& map, Release release) {
  for (auto it = map.begin(); it != map.end();) {
    if (it->second.used) {
      it->second.used = false;
      ++it;
    } else {
      release(it->second);
      it = map.erase(it);
    }
  }
}

}  // namespace gpubind
