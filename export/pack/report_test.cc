#include "export/pack/report.h"

#include <climits>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "export/pack/internal/step_notes.h"
#include "export/pack/pack.h"
#include "gtest/gtest.h"
#include "ledger/format/cosign/cosign.h"
#include "ledger/format/note/note.h"
#include "nlohmann/json.hpp"
#include "receipt.pb.h"

namespace ledger::pack {
namespace {

namespace pb = evidence::ledger::v1;

constexpr int64_t kT0 = 1'798'761'600'000'000;  // 2027-01-01T00:00:00Z

receipt::Entry At(uint64_t seq, int64_t us, pb::Receipt r) {
  receipt::Entry e;
  e.seq = seq;
  e.logged_at_us = us;
  e.emitter = "cn:gateway";
  e.receipt = std::move(r);
  return e;
}

pb::Receipt Base(const std::string& id, const std::string& step) {
  pb::Receipt r;
  r.set_receipt_id(id);
  r.set_team("team-a");
  r.set_run_id("run-1");
  r.set_step_id(step);
  r.set_workflow("wf");
  r.set_agent("agent");
  return r;
}

// A run: s1 starts and succeeds with one denied tool call; s0, started
// after s1 but first by key, is denied at its start.
void Feed(Outcomes& outcomes, const std::string& tool) {
  pb::Receipt start = Base("s1.start", "s1");
  start.mutable_agent_start()->set_decision(pb::DECISION_ALLOW);
  start.mutable_agent_start()->set_timeout_ms(1000);
  start.mutable_agent_start()->set_cost_reserved_micros(500);
  pb::Receipt call = Base("s1.tool", "s1");
  call.mutable_tool_call()->set_tool(tool);
  call.mutable_tool_call()->set_target("\"</td>");
  call.mutable_tool_call()->set_decision(pb::DECISION_DENY);
  call.mutable_tool_call()->set_reason("'<b>no</b>'");
  pb::Receipt exec = Base("s1.exec", "s1");
  exec.mutable_agent_exec()->set_start_receipt_id("s1.start");
  exec.mutable_agent_exec()->set_status(pb::EXEC_STATUS_SUCCEEDED);
  exec.mutable_agent_exec()->set_duration_ms(1500);
  pb::Receipt denied = Base("s0.start", "s0");
  denied.mutable_agent_start()->set_decision(pb::DECISION_DENY);
  denied.mutable_agent_start()->set_reason("sandbox not allowed");
  ASSERT_TRUE(outcomes.Add(At(0, kT0, start)).ok());
  ASSERT_TRUE(outcomes.Add(At(1, kT0 + 250'000, call)).ok());
  ASSERT_TRUE(outcomes.Add(At(2, kT0 + 1'500'000, exec)).ok());
  ASSERT_TRUE(outcomes.Add(At(3, kT0 + 2'000'000, denied)).ok());
}

std::string Report(const std::string& tool, const std::string& checkpoint) {
  Outcomes outcomes;
  Feed(outcomes, tool);
  manifest::Manifest m;
  m.origin = "example.com/log";
  m.scope = {"team-a", "run-1"};
  m.tree_size = 4;
  m.entries = 4;
  std::string page;
  EXPECT_TRUE(WriteReport(m, outcomes, checkpoint, "", [&](std::string_view piece) { page.append(piece); }).ok());
  return page;
}

std::string SignedCheckpoint() {
  auto signer = note::Signer::FromSeed("example.com/log", std::string(32, '\1'));
  return *signer->Sign(note::FormatCheckpoint({"example.com/log", 4, hash::Sha256("root")}));
}

TEST(ReportTimes, AreUtcWithMillisecondsAndTheZone) {
  EXPECT_EQ(UtcTime(kT0 + 1'234'567), "2027-01-01T00:00:01.234Z");
  EXPECT_EQ(Duration(840'000), "840 ms");
  EXPECT_EQ(Duration(12'345'678), "12.345 s");
  EXPECT_EQ(Duration(184'500'000), "3 min 04.500 s");
  EXPECT_EQ(Duration(7'500'000'000), "2 h 05 min 00.000 s");
}

TEST(Report, IsDeterministicAndListsEachEntryWithItsTimeAndDecision) {
  std::string page = Report("git", SignedCheckpoint());
  EXPECT_EQ(page, Report("git", SignedCheckpoint()));
  EXPECT_NE(page.find("<tr class=\"deny\"><td>1</td><td>2027-01-01T00:00:00.250Z</td><td>tool_call</td><td>git</td>"
                      "<td>&quot;&lt;/td&gt;</td><td><strong>deny</strong>: &#39;&lt;b&gt;no&lt;/b&gt;&#39;</td><td>"
                      "</td><td></td><td>cn:gateway</td></tr>"),
            std::string::npos)
      << page;
  EXPECT_NE(page.find("<tr><th scope=\"row\">ended</th><td>completed at 2027-01-01T00:00:01.500Z (seq 2, 1.500 s "
                      "after its start)</td></tr>"),
            std::string::npos);
  EXPECT_NE(page.find("<tr><th scope=\"row\">decision</th><td><strong>deny</strong>: sandbox not allowed</td></tr>"),
            std::string::npos);
}

TEST(Report, ShowsStepsInTheOrderTheyStartedAndADeniedStepAsAMark) {
  std::string page = Report("git", SignedCheckpoint());
  size_t s1 = page.find("<h3 class=\"\">1. s1 (attempt 1): succeeded</h3>");
  size_t s0 = page.find("<h3 class=\"denied\">2. s0 (attempt 1): denied</h3>");
  ASSERT_NE(s1, std::string::npos);
  ASSERT_NE(s0, std::string::npos);
  EXPECT_LT(s1, s0);
  EXPECT_NE(page.find("<polygon class=\"step denied\""), std::string::npos);
  EXPECT_EQ(page.find("<rect class=\"step denied\""), std::string::npos);
}

TEST(Report, EscapesEveryValueOfAnEntryAndHasNoScript) {
  std::string page = Report("<script>alert(1)</script>", SignedCheckpoint());
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("</td>\""), std::string::npos);
  EXPECT_NE(page.find("<td>&lt;script&gt;alert(1)&lt;/script&gt;</td>"), std::string::npos);
  EXPECT_NE(page.find("content=\"default-src 'none'; style-src 'sha256-"), std::string::npos);
}

TEST(Report, NamesTheCheckpointsKeyAndListsCosignaturesUnchecked) {
  std::string cp = SignedCheckpoint();
  auto witness = cosign::Cosigner::FromSeed("witness.example", std::string(32, '\2'));
  ASSERT_TRUE(witness.ok());
  auto line = witness->Cosign(note::FormatCheckpoint({"example.com/log", 4, hash::Sha256("root")}), 1'796'119'200);
  ASSERT_TRUE(line.ok());
  std::string page = Report("git", cp + *line);
  auto signer = note::Signer::FromSeed("example.com/log", std::string(32, '\1'));
  char id[16];
  std::snprintf(id, sizeof id, "%08x", signer->key_id());
  EXPECT_NE(page.find(std::string("<tr><th scope=\"row\">signed by</th><td>key <code>example.com/log</code>, key id "
                                  "<code>") +
                      id + "</code></td></tr>"),
            std::string::npos);
  EXPECT_NE(page.find("<tr><th scope=\"row\">witness</th><td>cosigned by <code>witness.example</code> at "
                      "2026-12-01T10:00:00Z (not checked by this page)</td></tr>"),
            std::string::npos)
      << page;
  EXPECT_EQ(Report("git", cp).find("cosigned by"), std::string::npos);
}

TEST(Report, CutsLongTimelineLabelsToFitTheirColumn) {
  Outcomes outcomes;
  pb::Receipt r = Base("x.start", std::string(40, 'x'));
  r.mutable_agent_start()->set_decision(pb::DECISION_ALLOW);
  r.mutable_agent_start()->set_timeout_ms(1000);
  ASSERT_TRUE(outcomes.Add(At(0, kT0, r)).ok());
  manifest::Manifest m;
  m.scope = {"team-a", "run-1"};
  std::string page;
  ASSERT_TRUE(WriteReport(m, outcomes, "", "", [&](std::string_view piece) { page.append(piece); }).ok());
  EXPECT_NE(page.find(">" + std::string(27, 'x') + "\xe2\x80\xa6</text>"), std::string::npos);
  EXPECT_NE(page.find("The checkpoint file is not a signed checkpoint."), std::string::npos);
}

TEST(Report, WritesTheScopeInWordsAndTheExpectScopeOfTheCommands) {
  Outcomes outcomes;
  manifest::Manifest m;
  auto page = [&](const manifest::Scope& scope) {
    m.scope = scope;
    std::string out;
    EXPECT_TRUE(WriteReport(m, outcomes, "", "", [&](std::string_view piece) { out.append(piece); }).ok());
    return out;
  };
  std::string team = page({"team-a", "", 10, 20, kT0, kT0 + 3'600'000'000});
  EXPECT_NE(team.find("<p>Scope: team <code>team-a</code> from 2027-01-01T00:00:00.000Z to 2027-01-01T01:00:00.000Z "
                      "(UTC, the end excluded): its entries among seqs 10 to 19.</p>"),
            std::string::npos);
  EXPECT_NE(team.find("--expect-scope team:team-a,2027-01-01T00:00:00Z,2027-01-01T01:00:00Z [--policy FILE]"),
            std::string::npos);
  std::string seqs = page({"", "", 5, 9});
  EXPECT_NE(seqs.find("<p>Scope: seqs 5 to 8 of the log, of every team.</p>"), std::string::npos);
  EXPECT_NE(seqs.find("--expect-scope seq:5:9 [--policy FILE]"), std::string::npos);
  std::string run = page({"team-a", "run 1'x"});
  EXPECT_NE(run.find("<p>Scope: run <code>run 1&#39;x</code> of team <code>team-a</code>.</p>"), std::string::npos);
  EXPECT_NE(run.find("--expect-scope &#39;run:team-a/run 1&#39;\\&#39;&#39;x&#39; [--policy FILE]"), std::string::npos);
}

TEST(Report, DetailsAtMostItsLimitsAndSaysSo) {
  Outcomes outcomes;
  uint64_t seq = 0;
  for (int i = 0; i < 1001; ++i) {
    pb::Receipt r = Base(absl::StrCat("s", i, ".start"), absl::StrCat("s", i));
    r.mutable_agent_start()->set_decision(pb::DECISION_ALLOW);
    r.mutable_agent_start()->set_timeout_ms(1000);
    ASSERT_TRUE(outcomes.Add(At(seq, kT0 + 2000 - i, r)).ok());  // the last started first
    ++seq;
  }
  for (int i = 0; i < 9000; ++i) {
    pb::Receipt r = Base(absl::StrCat("c", i), "s0");
    r.mutable_model_call()->set_route("r");
    r.mutable_model_call()->set_decision(pb::DECISION_ALLOW);
    ASSERT_TRUE(outcomes.Add(At(seq, kT0 + 5000, r)).ok());
    ++seq;
  }
  manifest::Manifest m;
  m.scope = {"team-a", "run-1"};
  std::string page;
  ASSERT_TRUE(WriteReport(m, outcomes, "", "", [&](std::string_view piece) { page.append(piece); }).ok());
  EXPECT_NE(page.find("<p>This page shows the first 1000 steps by start time of 1001; <code>outcomes.json</code> "
                      "lists them all.</p>"),
            std::string::npos);
  EXPECT_NE(page.find("<p>This page lists the first 10000 entries by seq of 10001; <code>entries.jsonl</code> "
                      "holds them all.</p>"),
            std::string::npos);
  EXPECT_NE(page.find("<h3 class=\"\">1. s1000 (attempt 1): pending</h3>"), std::string::npos);
  EXPECT_EQ(page.find(". s0 (attempt 1)"), std::string::npos);  // started last: not shown
  EXPECT_EQ(page.find("<td>10000</td>"), std::string::npos);
}

// Outcomes of `steps` steps over three runs, started in a scrambled
// order, spilled: a step in three is left pending, with a timeout that
// goes down and up from one step to the next. `falling`: every step of
// one run pending, each timing out before the one listed before it.
void FeedManySteps(Outcomes& outcomes, int steps, bool falling) {
  std::vector<receipt::Entry> entries;
  for (int i = 0; i < steps; ++i) {
    // Steps named in the order they are listed.
    std::string step = absl::StrFormat("s%05d", i);
    pb::Receipt r = Base(step + ".start", step);
    r.set_run_id(absl::StrCat("run-", falling ? 0 : i % 3));
    r.mutable_agent_start()->set_decision(i % 11 == 5 ? pb::DECISION_DENY : pb::DECISION_ALLOW);
    // The first step times out last: the first overdue depends on the time.
    int64_t timeout_ms = falling ? 10'000 - i : i == 0 ? 9000 : 1000 + (i * 7919) % 5000;
    r.mutable_agent_start()->set_timeout_ms(timeout_ms);
    int64_t start_us = falling ? kT0 : kT0 + (i * 104'729) % 3'000'000;
    entries.push_back(At(entries.size(), start_us, r));
    if (falling || i % 3 == 0) continue;
    pb::Receipt exec = Base(step + ".exec", step);
    exec.set_run_id(absl::StrCat("run-", i % 3));
    exec.mutable_agent_exec()->set_start_receipt_id(step + ".start");
    exec.mutable_agent_exec()->set_status(i % 2 ? pb::EXEC_STATUS_SUCCEEDED : pb::EXEC_STATUS_FAILED);
    entries.push_back(At(entries.size(), start_us + 500'000, exec));
  }
  // In small batches: the records spill as they pass the bound.
  for (size_t at = 0; at < entries.size(); at += 64) {
    auto batch = absl::MakeConstSpan(entries).subspan(at, 64);
    ASSERT_TRUE(outcomes.Project(batch).ok());
  }
}

// The report, UnsettledSteps and FirstOverdueStep (for graces and signed
// times around the steps' deadlines, and a grace so large that deadlines
// overflow) as one string.
std::string WhatTheReadersFind(Outcomes& outcomes) {
  manifest::Manifest m;
  m.scope = {"team-a", "run-1"};
  std::string found;
  EXPECT_TRUE(WriteReport(m, outcomes, "", "", [&](std::string_view piece) { found.append(piece); }).ok());
  auto unsettled = UnsettledSteps(outcomes);
  EXPECT_TRUE(unsettled.ok());
  for (const std::string& line : unsettled.value_or(std::vector<std::string>())) absl::StrAppend(&found, line, "\n");
  for (int64_t grace_us : {int64_t{-2'000'000}, int64_t{0}, int64_t{1'500'000}, INT64_MAX}) {
    for (int64_t after_us : {int64_t{0}, int64_t{1'000'000}, int64_t{4'000'000}, int64_t{9'000'000}}) {
      auto overdue = FirstOverdueStep(outcomes, grace_us, kT0 + after_us);
      EXPECT_TRUE(overdue.ok());
      if (overdue.ok() && *overdue) {
        const OverdueStep& o = **overdue;
        absl::StrAppend(&found, grace_us, " ", after_us, ": ", o.team, "/", o.run_id, "/", o.step_id, " ", o.attempt,
                        " ", o.deadline_us, "\n");
      } else {
        absl::StrAppend(&found, grace_us, " ", after_us, ": none\n");
      }
    }
  }
  return found;
}

// Write notes what the report, UnsettledSteps and FirstOverdueStep ask of
// the steps, so that they read no spilled record after it: what they find
// must be what they find by reading the records themselves.
TEST(Report, WhatWriteNotesIsWhatTheReadersFindThemselves) {
  for (bool falling : {false, true}) {
    SCOPED_TRACE(falling ? "timeouts falling past the pending steps noted" : "timeouts up and down");
    Outcomes outcomes(/*spill_bytes=*/16 << 10);
    FeedManySteps(outcomes, falling ? 5000 : 1500, falling);
    ASSERT_GT(outcomes.spilled_runs(), 1u);
    ASSERT_EQ(outcomes.step_notes(), nullptr);
    std::string themselves = WhatTheReadersFind(outcomes);
    EXPECT_NE(themselves.find("(pending)"), std::string::npos);
    EXPECT_NE(themselves.find("\n0 0: none\n"), std::string::npos);
    EXPECT_NE(themselves.find("\n0 9000000: team-a/run-0/s0"), std::string::npos);
    std::string json;
    ASSERT_TRUE(outcomes.Write([&](std::string_view piece) { json.append(piece); }).ok());
    ASSERT_NE(outcomes.step_notes(), nullptr);
    // Past its bound, the list of pending steps is left out.
    EXPECT_EQ(outcomes.step_notes()->pending.has_value(), !falling);
    EXPECT_EQ(WhatTheReadersFind(outcomes), themselves);
    std::string again;
    ASSERT_TRUE(outcomes.Write([&](std::string_view piece) { again.append(piece); }).ok());
    EXPECT_EQ(again, json);
    // An entry after it: the notes go.
    ASSERT_TRUE(outcomes.Add(At(1'000'000, kT0, Base("late", "late"))).ok());
    EXPECT_EQ(outcomes.step_notes(), nullptr);
  }
}

}  // namespace
}  // namespace ledger::pack

namespace ledger::pack {
namespace {

// A checkpoint-time note of CONTRACT section 5e's vectors that carries a
// time-stamp line (tests/vectors/timestamp.json's first case).
std::string StampedTimeNote() {
  const char* dir = std::getenv("LEDGER_VECTORS");
  std::ifstream in(std::string(dir ? dir : "tests/vectors") + "/timestamp.json");
  return nlohmann::json::parse(in)["cases"][0]["note"].get<std::string>();
}

std::string KeysAndTimePage(int format, const std::string& time_note, bool rotation) {
  Outcomes outcomes;
  Feed(outcomes, "git");
  if (rotation) {
    pb::Receipt r;
    r.set_receipt_id("ledger.key.1");
    r.set_team("ledger");
    r.set_run_id("ledger.keys");
    r.mutable_key_rotation()->set_old_key("example.com/log+00000001+AQ");
    r.mutable_key_rotation()->set_new_key("example.com/log+00000002+AQ");
    receipt::Entry e = At(4, kT0 + 3'000'000, r);
    e.emitter = "ledger";
    EXPECT_TRUE(outcomes.Add(e).ok());
  }
  manifest::Manifest m;
  m.format = format;
  m.unknown_grace_ms = 0;
  m.origin = "example.com/log";
  m.scope = {"team-a", "run-1"};
  m.tree_size = 5;
  m.entries = rotation ? 5 : 4;
  std::string page;
  EXPECT_TRUE(
      WriteReport(m, outcomes, SignedCheckpoint(), time_note, [&](std::string_view p) { page.append(p); }).ok());
  return page;
}

TEST(Report, Format7SaysWhichKeysSignedAndWhatVouchesForTheTime) {
  std::string note = StampedTimeNote();
  std::string page = KeysAndTimePage(7, note, true);
  EXPECT_NE(page.find("<h3>Keys and time</h3>"), std::string::npos);
  EXPECT_NE(page.find("seq 4: the log&#39;s key from example.com/log+00000001+AQ to example.com/log+00000002+AQ"),
            std::string::npos)
      << page.substr(page.find("Keys and time"), 600);
  EXPECT_NE(page.find("by the ledger's clock, signed with its key"), std::string::npos);
  EXPECT_NE(page.find("stamped by TSA <code>Vectors TSA</code> at 20"), std::string::npos);
  EXPECT_NE(page.find("none: the checkpoint carries no cosignature"), std::string::npos);
  EXPECT_NE(page.find("[--tsa-root FILE]"), std::string::npos);
  EXPECT_NE(page.find("openssl ts -verify"), std::string::npos);

  std::string plain = KeysAndTimePage(7, note.substr(0, note.find("\xe2\x80\x94 tsa ")), false);
  EXPECT_NE(plain.find("none: no time-stamping authority vouches for the ledger's time"), std::string::npos);
  EXPECT_NE(plain.find("none among the entries this page details"), std::string::npos);
}

TEST(Report, AFormat6PageKeepsItsWords) {
  std::string page = KeysAndTimePage(6, StampedTimeNote(), true);
  EXPECT_EQ(page.find("Keys and time"), std::string::npos);
  EXPECT_EQ(page.find("--tsa-root"), std::string::npos);
  // The time note is not an input of a format 6 page.
  EXPECT_EQ(page, KeysAndTimePage(6, "", true));
}

}  // namespace
}  // namespace ledger::pack
