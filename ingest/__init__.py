"""Ingest: PubMed XML, MEDLINE text and live E-utilities into one Article model."""
