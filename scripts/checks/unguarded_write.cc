// Must not compile under clang's -Wthread-safety -Werror=thread-safety:
// scripts/check_builds.sh checks that clang refuses it, so the annotations on
// ledger/sync's Mutex are known to be checked.
#include "ledger/sync/mutex.h"

struct Counter {
  ledger::sync::Mutex mu;
  int value ABSL_GUARDED_BY(mu) = 0;
};

void Increment(Counter& c) { ++c.value; }
