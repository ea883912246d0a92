"""``python -m bench.llm_load [--direct] [--gguf-cache DIR]``: one start of the huggingface
backend on the packaged SmolLM2 GGUF, from imports to a loaded model, printed in seconds.

Time whole processes with ``farm-bench`` (docs/models.md "Loading a GGUF through transformers"):
the default loads through the converted folder in ``--gguf-cache`` (made on the first run);
``--direct`` converts the GGUF in the process, as every start did before that folder existed.
"""

from __future__ import annotations

import argparse
import time

START = time.perf_counter()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--direct", action="store_true", help="convert the GGUF in this process")
    parser.add_argument("--gguf-cache", default="faiss_indices/gguf", help="llm.gguf_cache")
    args = parser.parse_args()

    from settings.offline import offline_env

    offline_env()
    import llms.gguf_dequantized as converted
    from llms.llm import build_llm
    from settings.config import HuggingFaceLLMConfig

    if args.direct:
        converted.dequantized_folder = lambda *_a, **_k: None
    build_llm(HuggingFaceLLMConfig(device="cpu", max_new_tokens=8, gguf_cache=args.gguf_cache))
    print(f"{'direct' if args.direct else 'folder'} {time.perf_counter() - START:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
