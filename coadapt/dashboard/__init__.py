"""The dashboard: a Gradio app over run folders, read-only (`coadapt dashboard`).

`folders`, `episodes` and `charts` turn run-store rows into what the views show and need no
browser; `app` is the Gradio app over them.
"""
