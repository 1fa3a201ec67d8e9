"""Real servers for tests and benchmarks (they listen on 127.0.0.1 only).

``openai_server.OpenAIServer``: an OpenAI-compatible chat endpoint with injectable faults.
Stages add their own protocol peers here (a SPARQL endpoint, ...).
"""
