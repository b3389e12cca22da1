"""``verityrag.elasticsearch_index.ElasticsearchLexicalIndex``: kept importable here (docs/architecture.md,
"Public surface"); the index lives in :mod:`verityrag.index.elastic.lexical`."""

from verityrag.index.elastic.lexical import ElasticsearchLexicalIndex

__all__ = ["ElasticsearchLexicalIndex"]
