"""The front door: ``search()`` (``api``), the one honest search in order (``orchestrator``:
seal, brief, search, score, register) and the briefing written before the loop."""
