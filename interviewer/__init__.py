"""interviewer: mock interviews on ML training, graded against rubrics."""

__version__ = "0.1.0"
