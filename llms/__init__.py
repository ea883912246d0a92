"""The chat models the chains run: built from ``llm:`` in cfg.yaml (:mod:`llms.llm`), each
declaring what it can do beyond chatting (:mod:`llms.capabilities`). Knows nothing of PubMed:
imports only ``settings``."""
