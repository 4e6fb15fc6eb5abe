"""`inferctl usage`: showback of tokens per client, model and lane (issue 30)."""
