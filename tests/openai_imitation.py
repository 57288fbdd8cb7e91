"""A loopback imitation of the OpenAI-compatible servers students use, for tests of the real client.

``ImitationServer`` is an ``http.server`` on 127.0.0.1 that speaks the Chat
Completions API (``POST /v1/chat/completions``, JSON or server-sent events) and
``GET /v1/models``. Its "brain" is the offline teaching model: the server turns
the OpenAI request back into LangChain messages, lets the brain answer, and
sends the answer back in OpenAI's format with a ``usage`` block. So the real
``langchain-openai`` client, the real agents and the real wrappers run end to
end, and no test leaves the machine.

What it imitates (``style``), as those servers behave and word their errors:

- ``openai``: a 400 whose code ``context_length_exceeded`` is only in the body;
  ``/v1/models`` publishes no window.
- ``vllm``: ``/v1/models`` publishes ``max_model_len``; the overflow error is
  ``{"object": "error", "message": "This model's maximum context length is N tokens. ...", "code": 400}``.
- ``ollama``: no window on ``/v1/models``; with ``truncate=True`` it silently
  keeps only the newest messages that fit ``window`` (its ``num_ctx``) and reports
  the smaller prompt; ``/api/ps`` publishes ``context_length`` when ``publish_window``;
  without truncation its error is "prompt too long; exceeded max context length by N tokens".
- ``openrouter``: ``/v1/models`` publishes ``context_length`` and ``pricing``;
  its error is "This endpoint's maximum context length is N tokens. ...".
- ``lmstudio``: the error body is a bare string, "Trying to keep the first N
  tokens when context the overflows. However, the model is loaded with context
  length of only M tokens, ...".
- ``llamacpp``: ``exceed_context_size_error`` with ``n_ctx`` in the body.

Other behaviours a test can switch on: ``errors`` (request number -> the
(status, body) to answer instead), ``stall`` (request numbers that get no
answer until ``stall_seconds`` pass), ``cut_off`` (request numbers whose tool
call arguments are cut mid-JSON, ``finish_reason: length``), ``fail_summaries``
(``"500"``, ``"400"`` or ``"empty"`` for every request without tools: the
summarizer's), ``reasoning_tokens`` (added to ``completion_tokens`` and reported in
``completion_tokens_details``) and ``token_scale`` (a server whose tokenizer
counts that many times flawedcode's count).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import AIMessage, convert_to_messages

from flawedcode.models import OfflineModel

STYLES = ("openai", "vllm", "ollama", "openrouter", "lmstudio", "llamacpp")


def overflow_error(style: str, window: int, prompt_tokens: int) -> tuple[int, Any]:
    """(status, body) of a context-length error, worded as each server words it."""
    if style == "openai":
        return 400, {"error": {"message": f"This model's maximum context length is {window} tokens. However, your "
                                          f"messages resulted in {prompt_tokens} tokens. Please reduce the length of "
                                          "the messages.", "type": "invalid_request_error", "param": "messages",
                               "code": "context_length_exceeded"}}
    if style == "vllm":
        return 400, {"object": "error", "message": f"This model's maximum context length is {window} tokens. However, "
                     f"you requested {prompt_tokens + 16} tokens ({prompt_tokens} in the messages, 16 in the completion)."
                     " Please reduce the length of the messages or completion.", "type": "BadRequestError",
                     "param": None, "code": 400}
    if style == "ollama":
        return 500, {"error": {"message": f"prompt too long; exceeded max context length by {prompt_tokens - window} "
                                          "tokens", "type": "api_error", "param": None, "code": None}}
    if style == "openrouter":
        return 400, {"error": {"message": f"This endpoint's maximum context length is {window} tokens. However, you "
                                          f"requested about {prompt_tokens} tokens ({prompt_tokens} of text input). "
                                          "Please reduce the length of either one, or use the \"middle-out\" transform "
                                          "to compress your prompt automatically.", "code": 400,
                               "metadata": {"provider_name": None}}}
    if style == "lmstudio":
        return 400, {"error": f"Trying to keep the first {prompt_tokens} tokens when context the overflows. However, "
                              f"the model is loaded with context length of only {window} tokens, which is not enough. "
                              "Try to load the model with a larger context length, or provide a shorter input"}
    if style == "llamacpp":
        return 400, {"error": {"code": 400, "message": "the request exceeds the available context size, try increasing "
                               "it", "type": "exceed_context_size_error", "n_prompt_tokens": prompt_tokens, "n_ctx": window}}
    raise ValueError(f"unknown style {style!r}")


class QuietServer(ThreadingHTTPServer):
    """A threading server that does not print a traceback when a client gave up waiting (a timeout test)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class ImitationServer:
    """A loopback OpenAI-compatible server (read the module docstring). Use it as a context manager."""

    def __init__(self, *, style: str = "openai", model: str = "gpt-4o-mini", window: int | None = None,
                 publish_window: bool = False, truncate: bool = False, stall: tuple[int, ...] = (),
                 stall_seconds: float = 3.0, cut_off: tuple[int, ...] = (), fail_summaries: str | None = None,
                 reasoning_tokens: int = 0, token_scale: float = 1.0, pricing: tuple[float, float] | None = None,
                 errors: dict[int, tuple[int, Any]] | None = None) -> None:
        assert style in STYLES, style
        self.style, self.model, self.window = style, model, window
        self.publish_window, self.truncate = publish_window, truncate
        self.stall, self.stall_seconds, self.cut_off = set(stall), stall_seconds, set(cut_off)
        self.fail_summaries, self.reasoning_tokens, self.token_scale = fail_summaries, reasoning_tokens, token_scale
        self.pricing = pricing
        self.errors = dict(errors or {})
        self.requests: list[dict] = []
        self.responses: list[tuple[int, Any]] = []
        self.summary_requests = 0
        self._release = threading.Event()
        self._lock = threading.Lock()
        window_brain = window if truncate and window else 10**7
        self.brain = OfflineModel(max_input_tokens=window_brain, overflow="truncate")
        self.httpd = QuietServer(("127.0.0.1", 0), self._handler())
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    # --- lifecycle ------------------------------------------------------------------------
    def __enter__(self) -> ImitationServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    # --- what it answers -------------------------------------------------------------------
    def models_listing(self) -> dict:
        entry: dict[str, Any] = {"id": self.model, "object": "model", "created": 0, "owned_by": self.style}
        if self.publish_window and self.window:
            if self.style == "vllm":
                entry["max_model_len"] = self.window
            elif self.style == "openrouter":
                entry["context_length"] = self.window
        if self.pricing:
            entry["pricing"] = {"prompt": f"{self.pricing[0] / 1e6:.10f}", "completion": f"{self.pricing[1] / 1e6:.10f}"}
        return {"object": "list", "data": [entry]}

    def ollama_ps(self) -> tuple[int, Any]:
        if self.style != "ollama":
            return 404, {"error": "not found"}
        entry: dict[str, Any] = {"name": self.model, "model": self.model}
        if self.publish_window and self.window:
            entry["context_length"] = self.window
        return 200, {"models": [entry]}

    def chat(self, number: int, body: dict) -> tuple[int, Any]:
        """(status, body) for one chat completion request."""
        if number in self.stall:
            self._release.wait(self.stall_seconds)
        if number in self.errors:
            return self.errors[number]
        messages = convert_to_messages(body["messages"])
        tools = body.get("tools") or []
        is_summary = not tools
        if is_summary:
            with self._lock:
                self.summary_requests += 1
            if self.fail_summaries == "500":
                return 500, {"error": {"message": "summary backend crashed", "type": "server_error"}}
            if self.fail_summaries == "400":
                return 400, {"error": {"message": "Invalid prompt: flagged", "type": "invalid_request_error",
                                       "code": "invalid_prompt"}}
        bound = self.brain.bind_tools(tools) if tools else self.brain
        reply = bound.invoke(messages)
        assert isinstance(reply, AIMessage)
        seen = reply.usage_metadata["input_tokens"]  # all of the prompt, unless truncating to the window
        if self.window and not self.truncate and seen * self.token_scale > self.window:
            return overflow_error(self.style, self.window, int(seen * self.token_scale))
        if is_summary and self.fail_summaries == "empty":
            reply = AIMessage("", usage_metadata={**reply.usage_metadata, "output_tokens": 0})
        return 200, self.completion(reply, int(seen * self.token_scale), cut_off=number in self.cut_off)

    def completion(self, reply: AIMessage, prompt_tokens: int, cut_off: bool = False) -> dict:
        calls = [{"id": call["id"], "type": "function",
                  "function": {"name": call["name"], "arguments": json.dumps(call["args"])}} for call in reply.tool_calls]
        finish = "tool_calls" if calls else "stop"
        if cut_off:
            calls = calls or [{"id": "call_cut", "type": "function",
                               "function": {"name": "write_file", "arguments": json.dumps(
                                   {"path": "notes.md", "content": "A long note. " * 40})}}]
            arguments = calls[-1]["function"]["arguments"]
            calls[-1]["function"]["arguments"] = arguments[: max(1, len(arguments) - 8)]  # cut inside the last value
            finish = "length"
        completion_tokens = max(1, reply.usage_metadata["output_tokens"]) + self.reasoning_tokens
        usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                 "total_tokens": prompt_tokens + completion_tokens}
        if self.reasoning_tokens:
            usage["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if calls:
            message["tool_calls"] = calls
        return {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0, "model": self.model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": usage}

    def stream_events(self, completion: dict, include_usage: bool) -> Iterator[dict]:
        """The same completion as server-sent event chunks: role, text, tool calls in pieces, finish, usage."""
        choice = completion["choices"][0]
        message = choice["message"]

        def chunk(delta: dict, finish: str | None = None) -> dict:
            return {"id": completion["id"], "object": "chat.completion.chunk", "created": 0, "model": self.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""})
        if message.get("content"):
            yield chunk({"content": message["content"]})
        for index, call in enumerate(message.get("tool_calls") or []):
            arguments = call["function"]["arguments"]
            yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                         "function": {"name": call["function"]["name"], "arguments": arguments[:10]}}]})
            if arguments[10:]:
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[10:]}}]})
        yield chunk({}, choice["finish_reason"])
        if include_usage:
            yield {"id": completion["id"], "object": "chat.completion.chunk", "created": 0, "model": self.model,
                   "choices": [], "usage": completion["usage"]}

    # --- plumbing -----------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                if self.path.rstrip("/").endswith("/v1/models"):
                    self._send(200, server.models_listing())
                elif self.path == "/api/ps":
                    self._send(*server.ollama_ps())
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with server._lock:
                    server.requests.append(body)
                    number = len(server.requests)
                status, payload = server.chat(number, body)
                server.responses.append((status, payload))
                if status == 200 and body.get("stream"):
                    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    self._send_events(server.stream_events(payload, include_usage))
                else:
                    self._send(status, payload)

            def _send(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send_events(self, events: Iterator[dict]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for event in events:
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        return Handler


@contextmanager
def imitation(**settings: Any) -> Iterator[ImitationServer]:
    """``with imitation(style="vllm", window=4096, publish_window=True) as server: ...``"""
    with ImitationServer(**settings) as server:
        yield server
