#pragma once
// Exit codes of the gpubind binary, in one place (docs/cli.md lists them for users).
namespace gpubind {

enum ExitStatus : int {
  kExitOk = 0,
  kExitFailure = 1,        // runtime error: unreadable input, failed syscall
  kExitUsage = 2,          // bad flags or arguments
  kExitCheckFindings = 3,  // `check` found problems
  kExitRebindRefused = 4,       // `rebind`: nothing changed, a rank or its GPU cannot be told
  kExitRebindNoPermission = 5,  // `rebind`: a process of another user could not be moved (others were)
  kExitDoctorWarnings = 3,      // `doctor`: a check warned, none failed
  kExitDoctorFailures = 4,      // `doctor`: a check failed
  kExitTimedOut = 124,     // `bench --ab`: a run outlived --timeout (as timeout(1))
  kExitExecFailed = 125,   // `exec`: gpubind itself failed before the command started
  kExitNotExecutable = 126,
  kExitNotFound = 127,
};

}  // namespace gpubind
