"""``python -m bench.llm_speed``: one LLM backend's raw speed on a real answer prompt, no retrieval.

The prompt is the answer prompt over the first three corpus abstracts (about what plain mode
sends). Reports time to first token and full-answer time (p50 over ``--repeat`` runs) and decode
tokens/s, for each ``--backends`` spec (``gpt4all:n_threads=1:n_batch=512``, as in
``bench answer``). Needs no index: for trying thread and batch settings quickly.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from langchain_core.documents import Document


def _prompt(cfg):  # noqa: ANN001, ANN202
    from chains.prompts import Prompts
    from chains.steps import answer_messages
    from ingest.corpus import load_corpus

    articles = load_corpus(cfg).articles[:3]
    docs = [Document(page_content=a.abstract, metadata={"pmid": a.pmid, "title": a.title})
            for a in articles]  # fmt: skip
    question = "What do these studies find about intelligence?"
    return answer_messages(Prompts.from_config(cfg).answer, question, docs)


def main(argv: list[str] | None = None) -> int:
    from bench.answer import backend_config
    from llms.llm import build_llm
    from settings.config import load_config

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--backends", default="huggingface,gpt4all")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    args = parser.parse_args(argv)
    cfg = load_config()
    msgs = _prompt(cfg)
    out = {}
    for spec in args.backends.split(","):
        llm_cfg = backend_config(cfg, spec).llm.model_copy(
            update={"max_new_tokens": args.max_new_tokens}
        )
        t = time.perf_counter()
        model = build_llm(llm_cfg, root=cfg.root)
        load_s = time.perf_counter() - t
        list(model.stream(msgs))  # warm-up
        ttft, total, rate = [], [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            first = None
            n = 0
            for _chunk in model.stream(msgs):
                n += 1
                first = first or time.perf_counter() - t0
            end = time.perf_counter() - t0
            ttft.append(first or end)
            total.append(end)
            rate.append((n - 1) / max(1e-9, end - (first or end)))
        out[spec] = {
            "load_s": round(load_s, 2),
            "ttft_p50_s": round(statistics.median(ttft), 3),
            "total_p50_s": round(statistics.median(total), 3),
            "decode_tok_s": round(statistics.median(rate), 1),
            "chunks": n,
        }
        print(spec, out[spec], flush=True)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
