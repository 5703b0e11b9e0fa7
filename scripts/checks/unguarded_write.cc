// Must not compile under clang's -Wthread-safety -Werror=thread-safety:
// scripts/check_builds.sh checks that clang refuses it, so the annotations on
// util/sync's Mutex are known to be checked.
#include "util/sync/mutex.h"

struct Counter {
  ledger::sync::Mutex mu;
  int value ABSL_GUARDED_BY(mu) = 0;
};

void Increment(Counter& c) { ++c.value; }
