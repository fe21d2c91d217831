"""Cognition on operator exchanges (seed 002, issue 17), pure: the analysis of an
exchange (``analysis``), the heuristic analyser (``heuristic``, its word lists in
``phrases``), the model path's JSON contract (``model_answer``), and the hybrid
retrieval shared with ``search_memory`` (``retrieval``, its words in ``keywords``),
and the memory policy's reserved key prefix (``policy``)."""
