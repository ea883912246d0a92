"""``python -m bench.llm_cuda``: the transformers backend on a CUDA GPU, 4-bit NF4 (bitsandbytes,
``llm.load_in_4bit: true``) against fp16, through the project's own loader (``llms.llm``).

For each variant: load time, GPU memory after loading, how many linear layers really are 4-bit
(``bitsandbytes.nn.Linear4bit``), time to first token, decode tokens/s, and the greedy answer to
one fixed prompt (the two answers are printed side by side: 4-bit changes the numbers, so they
may differ). Imports nothing beyond ``llms.llm`` and ``settings``, so it runs on a GPU machine
with only torch, transformers, accelerate, bitsandbytes, gguf, pydantic and langchain-core.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

PROMPT = (
    "Context information is below.\n[1] Methylphenidate for ADHD in adults (2020)\n"
    "In a randomised trial of 240 adults with ADHD, methylphenidate reduced symptom scores by "
    "30% compared with placebo over 12 weeks.\n"
    "Question: Does methylphenidate help adults with ADHD?\nAnswer:"
)


def _variant(model_path: str | None, gguf_file: str | None, four_bit: bool, tokens: int) -> dict:
    import torch
    from langchain_core.messages import HumanMessage

    from llms.llm import build_llm
    from settings.config import HuggingFaceLLMConfig

    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    cfg = HuggingFaceLLMConfig(
        backend="huggingface", model_path=model_path, gguf_file=gguf_file, device="cuda",
        load_in_4bit=four_bit, max_new_tokens=tokens, temperature=0.0,
    )  # fmt: skip
    t0 = time.perf_counter()
    llm = build_llm(cfg, root=Path.cwd())
    load_s = time.perf_counter() - t0
    model = llm.model  # type: ignore[attr-defined]
    try:
        from bitsandbytes.nn import Linear4bit

        four_bit_layers = sum(isinstance(m, Linear4bit) for m in model.modules())
    except ImportError:
        four_bit_layers = 0
    linear = sum(isinstance(m, torch.nn.Linear) for m in model.modules())
    msgs = [HumanMessage(PROMPT)]
    list(llm.stream(msgs))  # warm-up (CUDA kernels, caches)
    t0 = time.perf_counter()
    first = None
    pieces: list[str] = []
    for chunk in llm.stream(msgs):
        first = first or time.perf_counter() - t0
        pieces.append(str(chunk.content))
    total = time.perf_counter() - t0
    n_tokens = len(llm.tokenizer("".join(pieces))["input_ids"])  # type: ignore[attr-defined]
    return {
        "load_in_4bit": four_bit,
        "load_s": round(load_s, 2),
        "gpu_memory_mb": round(torch.cuda.max_memory_allocated() / 2**20, 1),
        "linear_layers": linear,
        "linear4bit_layers": four_bit_layers,
        "weight_dtypes": sorted({str(p.dtype) for p in model.parameters()}),
        "first_token_s": round(first or total, 3),
        "tokens": n_tokens,
        "tokens_per_s": round(n_tokens / max(total - (first or 0), 1e-6), 1),
        "answer": "".join(pieces),
    }


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-path", default=None, help="default: the packaged SmolLM2")
    parser.add_argument("--gguf-file", default=None)
    parser.add_argument("--max-new-tokens", type=int, default=48)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print(json.dumps({"error": "no CUDA GPU visible"}))
        return 1
    out = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "variants": [
            _variant(args.model_path, args.gguf_file, four_bit, args.max_new_tokens)
            for four_bit in (True, False)
        ],
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
