"""The models wing: sentence embeddings and static word vectors, loaded lazily, offline.

Nothing here knows about questions or grades; everything above uses it.
"""
