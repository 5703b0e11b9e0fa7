// The scope of an evidence pack: a run, a team's time window, or a seq
// range, as the manifest states it (export/manifest, CONTRACT.md section 7).
#ifndef EXPORT_VERIFY_CC_SCOPE_H_
#define EXPORT_VERIFY_CC_SCOPE_H_

#include "export/manifest/manifest.h"

namespace ledger::verify {

using Scope = manifest::Scope;

}  // namespace ledger::verify

#endif  // EXPORT_VERIFY_CC_SCOPE_H_
