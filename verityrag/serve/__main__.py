"""``python -m verityrag.serve``: the REST API and the Streamlit app on the bundled corpus."""

from verityrag.serve.launcher import main

raise SystemExit(main())
