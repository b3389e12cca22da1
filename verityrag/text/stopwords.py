"""English stopwords shared by every lexical component."""

from __future__ import annotations

# The classic Glasgow/sklearn-style core list, trimmed of words that carry
# meaning in questions over facts ("first", "last", "never", numbers words).
ENGLISH_STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each
    few for from further had has have having he her here hers herself him himself his how
    i if in into is it its itself just me more most my myself no nor not of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves s t d ll m re ve don isn wasn weren aren doesn didn
    hasn haven hadn won wouldn shouldn couldn may might must shall us
    """.split()
)
