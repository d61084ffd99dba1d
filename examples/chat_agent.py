"""A terminal chat agent with long-term memory, in one file: what an agent's loop around Hippocampus
looks like. Each turn it recalls what the answer needs (`recall_loop`), answers through any
OpenAI-compatible endpoint, marks the memories the answer used (`mark_used`), and keeps the turn in
a `Session`, whose extraction stores what the conversation told about the user when the session
ends. At exit it consolidates the user's memories (the nightly job, run once).

    python examples/chat_agent.py --user alice                       # offline: recall only, no answers
    python examples/chat_agent.py --user alice --base-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b

With no endpoint (no --base-url and no HIPPOCAMPUS_LLM_* settings) it runs on the offline rules
provider and says so: memories are recalled and shown, but there is no model to answer, and the
session's extraction is the write rules. A remote endpoint's key comes from HIPPOCAMPUS_LLM_API_KEY
or OPENAI_API_KEY, never from the command line. Type /quit (or end the input) to leave.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from typing import IO, Any

from hippocampus import Memory
from hippocampus.agent import Session, recall_loop
from hippocampus.errors import HippocampusError

SYSTEM = (
    "You are a helpful assistant with a long-term memory of this user. Answer the user's last message "
    "briefly. Use what is recalled about the user where it helps; never invent facts about them."
)
OFFLINE_NOTE = ("offline: no model endpoint is configured, so this agent recalls but cannot answer "
                "(set --base-url, or HIPPOCAMPUS_LLM_PROVIDER=openai and HIPPOCAMPUS_LLM_BASE_URL)")


def transcript(messages: Iterable[dict[str, str]]) -> str:
    """The conversation as the answer model reads it, oldest first."""
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages)


def answer_offline(recalled: Any) -> str:
    """No model: say so, and show what was recalled (nothing is marked used: nobody answered)."""
    if not recalled.memory_ids:
        return "(offline) I recall nothing about this."
    lines = [f"- {text}" for text in recalled.texts]
    return "(offline) What I recall:\n" + "\n".join(lines)


def chat(memory: Memory, user_id: str, chat_id: str, lines: Iterable[str], out: IO[str], max_rounds: int = 3) -> dict[str, int]:
    """Run the conversation over `lines` (one user message each) and return its counts: turns,
    recall rounds and searches, memories marked used, memories the session stored."""
    model = memory.llm
    offline = memory.config.llm_provider == "offline"
    counts = {"turns": 0, "rounds": 0, "searches": 0, "used": 0, "stored": 0}
    if offline:
        print(OFFLINE_NOTE, file=out)
    with Session(memory, user_id, chat_id) as session:
        for line in lines:
            text = line.strip()
            if text in ("/quit", "/exit"):
                break
            if not text:
                continue
            counts["turns"] += 1
            report = session.add_message("user", text)
            if report is not None:
                counts["stored"] += len(report.added)
            recalled = recall_loop(memory, session.messages, user_id, max_rounds=max_rounds)
            counts["rounds"] += len(recalled.rounds)
            counts["searches"] += sum(1 for r in recalled.rounds if r.query)
            used: list[int] = []
            if offline:
                answer = answer_offline(recalled)
            else:
                system = "\n\n".join(part for part in (SYSTEM, recalled.context, session.tool_context) if part)
                try:
                    answer = model.chat(system, transcript(session.messages))
                except HippocampusError as exc:  # the turn goes on; the memory is untouched
                    answer = f"(the model failed: {exc})"
                used = recalled.used_by(answer)
                if used:
                    memory.mark_used(used, user_id=user_id)
                    counts["used"] += len(used)
            print(f"assistant> {answer}", file=out)
            needs = "; ".join(r.need for r in recalled.rounds if r.need) or "-"
            print(f"   [memory: {len(recalled.memory_ids)} recalled in {len(recalled.rounds)} round(s), need: {needs}; "
                  f"used {len(used)}]", file=out)
            for warning in recalled.warnings:
                print(f"   [memory warning: {warning}]", file=out)
            session.add_message("assistant", answer)
        report = session.end()
    counts["stored"] += len(report.added)
    print(f"session: {report.messages} messages extracted, {len(report.added)} memories stored, "
          f"{len(report.updated)} updated ({report.mode})", file=out)
    for warning in report.warnings:
        print(f"   [memory warning: {warning}]", file=out)
    return counts


def main(argv: list[str] | None = None, stdin: IO[str] | None = None, out: IO[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--user", default="me", help="whose memories (default: me)")
    ap.add_argument("--chat", default="terminal", help="the chat id the session's memories carry")
    ap.add_argument("--store", help="the milvus-lite path or Milvus URI (default: the configured store)")
    ap.add_argument("--base-url", help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1")
    ap.add_argument("--model", help="the model name at that endpoint")
    ap.add_argument("--max-rounds", type=int, default=3, help="recall rounds before answering (1-10)")
    args = ap.parse_args(argv)
    stdin, out = stdin or sys.stdin, out or sys.stdout
    overrides: dict[str, Any] = {}
    if args.store:
        overrides["milvus_uri"] = args.store
    if args.base_url:
        overrides.update(llm_provider="openai", llm_base_url=args.base_url)
    if args.model:
        overrides["llm_model"] = args.model
    interactive = stdin.isatty()
    try:
        with Memory(**overrides) as memory:
            if memory.config.llm_provider != "offline" and memory.config.llm_model == "offline-rules":
                print("error: name the endpoint's model with --model (or HIPPOCAMPUS_LLM_MODEL)", file=sys.stderr)
                return 2
            print(f"chatting as {args.user} with {memory.config.llm_model} (memories: {memory.config.milvus_uri}); "
                  "/quit to leave", file=out)
            lines = _prompted(stdin, out) if interactive else stdin
            counts = chat(memory, args.user, args.chat, lines, out, args.max_rounds)
            stats = memory.consolidate(user_id=args.user)
    except HippocampusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    turns = max(counts["turns"], 1)
    print(f"{counts['turns']} turns: {counts['rounds'] / turns:.1f} recall rounds and {counts['searches'] / turns:.1f} "
          f"searches a turn, {counts['used']} memories marked used", file=out)
    print(f"consolidated: {stats.semantic_created} facts distilled, {stats.merged} merged, {stats.errors} errors", file=out)
    return 0


def _prompted(stdin: IO[str], out: IO[str]) -> Iterable[str]:
    while True:
        print("you> ", end="", file=out, flush=True)
        line = stdin.readline()
        if not line:
            return
        yield line


if __name__ == "__main__":
    sys.exit(main())
