#!/usr/bin/env python3
"""Receipts an agent platform would send, as JSON lines (CONTRACT section 3).

Three teams run workflows; each run has container steps (agent_start, then
model and tool calls, then agent_exec). Some calls are denied by policy, one
step is denied outright, one worker crashes and never reports its step's
completion, another reports its completion only late (written to
--late-file, to be sent after the step was declared unknown), and one
completion names a start that never came (an orphan). Deterministic for a
given seed.

Usage: demo_workload.py [--runs N] [--seed S] [--start-us T] [--timeout-ms T]
                        [--late-file PATH]
"""
import argparse
import hashlib
import json
import random
import sys

TEAMS = {
    "team-code": ("CodeWorkflow", "coder", "team-code"),
    "team-support": ("SupportWorkflow", "triage", "team-support"),
    "team-data": ("ReportWorkflow", "analyst", "team-data"),
}
MODELS = [("openai", "demo-openai", 15), ("anthropic", "demo-claude", 12), ("local", "llama-small", 1)]
TOOLS = [("git", "https://git.internal/repo"), ("jira", "https://jira.internal"), ("search", "rag://docs")]


def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=24)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--start-us", type=int, default=1767225600000000)
    ap.add_argument("--timeout-ms", type=int, default=0, help="every step's timeout (0: varied)")
    ap.add_argument("--late-file", default="", help="where the late completion goes")
    args = ap.parse_args()
    rnd = random.Random(args.seed)
    t = args.start_us
    out = []
    n = 0

    def emit(r):
        nonlocal t, n
        t += rnd.randint(1000, 400000)
        n += 1
        r["occurred_at_us"] = t
        r["trace_id"] = digest("trace" + r["run_id"])[:32]
        r["span_id"] = digest("span%d" % n)[:16]
        out.append(r)

    crashed = denied_step = False
    late = []
    for run in range(args.runs):
        team = list(TEAMS)[run % 3]
        workflow, agent, namespace = TEAMS[team]
        run_id = "run-%04d" % run
        for step in range(rnd.randint(2, 4)):
            step_id = "step-%d" % step
            base = {"team": team, "run_id": run_id, "step_id": step_id, "workflow": workflow, "agent": agent}
            start_id = "%s.%s.%s.start" % (team, run_id, step_id)
            if not denied_step and run == 4 and step == 1:
                denied_step = True
                emit(dict(base, receipt_id=start_id, kind="agent_start", decision="deny",
                          reason="sandbox image not on the allow-list", namespace=namespace,
                          sandbox=agent, command_sha256=digest("rm -rf /")))
                continue
            timeout = args.timeout_ms or rnd.choice([60000, 120000, 300000])
            emit(dict(base, receipt_id=start_id, kind="agent_start", decision="allow", timeout_ms=timeout,
                      cost_reserved_micros=timeout * 5, namespace=namespace, sandbox=agent,
                      command_sha256=digest("python review.py %d" % step), credential_id="cred-%s-%d" % (team, step),
                      classification="internal"))
            cost = 0
            for call in range(rnd.randint(1, 4)):
                provider, model, price = rnd.choice(MODELS)
                denied = rnd.random() < 0.12
                tokens_in, tokens_out = rnd.randint(200, 4000), 0 if denied else rnd.randint(50, 1500)
                c = 0 if denied else (tokens_in + tokens_out) * price // 10
                cost += c
                r = dict(base, receipt_id="%s.%s.%s.model.%d" % (team, run_id, step_id, call), kind="model_call",
                         provider=provider, model=model, route="%s/%s" % (provider, model),
                         decision="deny" if denied else "allow", input_tokens=tokens_in, output_tokens=tokens_out,
                         cost_micros=c, request_sha256=digest("prompt %d %d" % (run, call)),
                         status_code=403 if denied else 200, latency_ms=rnd.randint(80, 4000))
                if denied:
                    r["reason"] = "tokenLimit exceeded for workflow"
                else:
                    r["response_sha256"] = digest("answer %d %d" % (run, call))
                emit(r)
            for call in range(rnd.randint(0, 2)):
                tool, target = rnd.choice(TOOLS)
                denied = tool == "jira" and team != "team-support"
                emit(dict(base, receipt_id="%s.%s.%s.tool.%d" % (team, run_id, step_id, call), kind="tool_call",
                          tool=tool, target=target, decision="deny" if denied else "allow",
                          reason="tool not in allowedTools" if denied else "", status_code=403 if denied else 200,
                          latency_ms=rnd.randint(5, 900), request_sha256=digest("tool %d %d" % (run, call))))
            if not crashed and run == 7 and step == 0:
                crashed = True  # the worker died: no agent_exec ever comes
                continue
            if run == 10 and step == 0 and args.late_file:
                # This worker's report is held back until after the deadline.
                late.append(dict(base, receipt_id="%s.%s.%s.exec" % (team, run_id, step_id), kind="agent_exec",
                                 start_receipt_id=start_id, status="succeeded", exit_code=0, duration_ms=95000,
                                 output_sha256=digest("late"), output_bytes=1200, cost_micros=cost))
                continue
            status = rnd.choices(["succeeded", "failed", "timed_out"], [8, 1, 1])[0]
            emit(dict(base, receipt_id="%s.%s.%s.exec" % (team, run_id, step_id), kind="agent_exec",
                      start_receipt_id=start_id, status=status, exit_code=0 if status == "succeeded" else 1,
                      duration_ms=rnd.randint(2000, 60000), output_sha256=digest("out %d %d" % (run, step)),
                      output_bytes=rnd.randint(100, 90000), dlp_findings=0, cost_micros=cost))
    # A completion whose start never reached the ledger.
    emit({"team": "team-support", "run_id": "run-0002", "step_id": "step-9", "workflow": "SupportWorkflow",
          "agent": "triage", "receipt_id": "team-support.run-0002.step-9.exec", "kind": "agent_exec",
          "start_receipt_id": "team-support.run-0002.step-9.start", "status": "succeeded", "exit_code": 0})

    def dump(records, f):
        for r in records:
            r = {k: v for k, v in r.items() if v != ""}
            f.write(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n")
    dump(out, sys.stdout)
    if args.late_file:
        for r in late:
            t += 1
            r["occurred_at_us"] = t
        with open(args.late_file, "w") as f:
            dump(late, f)


if __name__ == "__main__":
    main()
