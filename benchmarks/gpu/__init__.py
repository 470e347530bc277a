"""The GPU run with trained weights (``scripts/gpu_run.py``): carrying the model and code to a bare
GPU machine (``carry``), the two device calls (``calls``) and their time-boxed sections (``sections``),
its fixed prompts (``prompts``), measurements (``measure``) and result folders (``results``). One-off
measurement code, outside the installed package."""
