"""The evaluation wing: the grading eval, the retrieval eval, the bench and the load bench.

Reads the graders and the interview from above; nothing in the product imports it.
"""
