"""PubMed research assistant: command line, configuration and the Chainlit chat."""
