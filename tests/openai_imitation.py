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

Behaviours of real servers and their users' issue threads (round 2), each a switch:

- ``role_scales`` (role -> factor): a tokenizer that counts each role's messages
  differently (tool results 0.8x, prose 1.2x), so the reported/counted ratio moves
  as the conversation's mix changes, though nothing is ever truncated;
- ``tool_call_ids``: ``"missing"`` (older Ollama, llama.cpp) or ``"empty"`` (Gemini's
  compatibility layer) instead of an id; ``strict`` answers 400 to a request
  holding an assistant tool call without an id or a tool result that answers none;
- ``arguments``: ``"object"`` (a JSON object, not a string) or ``"double"`` (a JSON
  string inside a string); ``text_tool_calls``: the call written in the content as
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (Hermes/Qwen style), or with
  ``"bare"`` the first call as the whole reply, ``{"name": ..., "parameters": {...}}`` (Llama 3.x on Ollama);
- ``reasoning``: ``"think"`` (a ``<think>...</think>`` block before the answer),
  ``"field"`` (``reasoning_content`` beside the answer), ``"only"`` (the answer in
  ``reasoning_content``, the content empty); ``reasoning_words`` sets its length;
- ``usage``: ``"zeros"`` (every count 0), ``"fixed"`` (the same small counts every time), ``"no_prompt"`` (``prompt_tokens: 0``, the reply
  counted), ``"none"`` (no usage block), ``"uncached"``
  (``prompt_tokens`` counts only the messages after the prefix the previous request
  shared: Ollama's and llama.cpp's counts skip a reused KV cache);
  ``cached_tokens``: that many prompt tokens reported as cached;
- ``finish``: request number -> ``"content_filter"`` (empty content, Azure/OpenAI style)
  or ``"length"`` (a text answer cut in the middle);
- ``trickle``: request numbers whose answer is sent a few bytes at a time, every
  ``trickle_interval`` seconds (each read is quick; the whole takes long);
- ``headers``: request number -> extra response headers (``Retry-After``);
  ``errors`` bodies that are strings are sent as ``text/html`` (a web page);
- ``inject``: text added to every text answer (escape sequences, say: a model can write them);
- ``served``: the model ids ``/v1/models`` lists (e.g. ``["qwen2.5-coder:7b"]``);
  with ``strict_model`` a chat request for another name gets Ollama's 404.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import AIMessage, convert_to_messages

from flawedcode.models import OfflineModel
from flawedcode.tokens import TokenCounter

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
                 errors: dict[int, tuple[int, Any]] | None = None, role_scales: dict[str, float] | None = None,
                 tool_call_ids: str = "normal", strict: bool = False, arguments: str = "string",
                 text_tool_calls: bool | str = False, reasoning: str | None = None, reasoning_words: int = 40,
                 usage: str = "normal", cached_tokens: int = 0, finish: dict[int, str] | None = None,
                 trickle: tuple[int, ...] = (), trickle_interval: float = 0.2, headers: dict[int, dict] | None = None,
                 served: list[str] | None = None, strict_model: bool = False, inject: str = "") -> None:
        assert style in STYLES, style
        self.style, self.model, self.window = style, model, window
        self.publish_window, self.truncate = publish_window, truncate
        self.stall, self.stall_seconds, self.cut_off = set(stall), stall_seconds, set(cut_off)
        self.fail_summaries, self.reasoning_tokens, self.token_scale = fail_summaries, reasoning_tokens, token_scale
        self.pricing = pricing
        self.errors = dict(errors or {})
        self.role_scales = dict(role_scales or {})
        self.tool_call_ids, self.strict, self.arguments = tool_call_ids, strict, arguments
        self.text_tool_calls, self.reasoning, self.reasoning_words = text_tool_calls, reasoning, reasoning_words
        self.usage, self.cached_tokens, self.finish = usage, cached_tokens, dict(finish or {})
        self.trickle, self.trickle_interval, self.headers = set(trickle), trickle_interval, dict(headers or {})
        self.served, self.strict_model, self.inject = list(served or [model]), strict_model, inject
        self.counter = TokenCounter()
        self._previous_keys: list[tuple[str, str]] = []
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
        entries = []
        for name in self.served:
            entry: dict[str, Any] = {"id": name, "object": "model", "created": 0, "owned_by": self.style}
            if self.publish_window and self.window:
                if self.style == "vllm":
                    entry["max_model_len"] = self.window
                elif self.style == "openrouter":
                    entry["context_length"] = self.window
            if self.pricing:
                entry["pricing"] = {"prompt": f"{self.pricing[0] / 1e6:.10f}",
                                    "completion": f"{self.pricing[1] / 1e6:.10f}"}
            entries.append(entry)
        return {"object": "list", "data": entries}

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
        if self.strict_model and body.get("model") not in self.served:
            return 404, {"error": {"message": f"model \"{body.get('model')}\" not found, try pulling it first",
                                   "type": "api_error", "param": None, "code": None}}
        if self.strict and (refusal := strict_refusal(body["messages"])):
            return 400, {"error": {"message": refusal, "type": "invalid_request_error", "param": "messages",
                                   "code": None}}
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
        completion = self.completion(reply, self.reported_prompt_tokens(seen, messages, tools), cut_off=number in self.cut_off,
                                     finish=self.finish.get(number))
        return 200, completion

    def reported_prompt_tokens(self, seen: int, messages: list, tools: list) -> int:
        """The prompt tokens this server's tokenizer reports: ``token_scale`` overall, then ``role_scales`` per role."""
        if self.usage == "uncached":
            keys = [(message.type, str(message.content)) for message in messages]
            shared = next((i for i, (a, b) in enumerate(zip(keys, self._previous_keys)) if a != b),
                          min(len(keys), len(self._previous_keys)))
            self._previous_keys = keys
            return max(1, sum(self.counter.count_message(message) for message in messages[shared:])) if shared else seen
        reported = seen * self.token_scale
        if self.role_scales and not self.truncate:
            reported += sum((self.role_scales.get(message.type, 1.0) - 1) * self.counter.count_message(message)
                            for message in messages)
        return int(reported)

    def completion(self, reply: AIMessage, prompt_tokens: int, cut_off: bool = False, finish: str | None = None) -> dict:
        calls = [{"id": self._call_id(call["id"]), "type": "function",
                  "function": {"name": call["name"], "arguments": self._arguments(call["args"])}}
                 for call in reply.tool_calls]
        content = (reply.text + self.inject if reply.text else None)
        if self.text_tool_calls == "bare" and calls:  # Llama 3.x on Ollama: the call as the whole reply
            content = json.dumps({"name": reply.tool_calls[0]["name"], "parameters": reply.tool_calls[0]["args"]})
            calls = []
        elif self.text_tool_calls and calls:
            content = "\n".join("<tool_call>\n" + json.dumps({"name": call["name"], "arguments": call["args"]}) +
                                "\n</tool_call>" for call in reply.tool_calls)
            calls = []
        finish_reason = "tool_calls" if calls else "stop"
        if finish == "content_filter":
            content, calls, finish_reason = None, [], "content_filter"
        elif finish == "length" and content:
            content, finish_reason = content[: max(1, len(content) // 2)], "length"
        if cut_off:
            calls = calls or [{"id": "call_cut", "type": "function",
                               "function": {"name": "write_file", "arguments": json.dumps(
                                   {"path": "notes.md", "content": "A long note. " * 40})}}]
            arguments = calls[-1]["function"]["arguments"]
            calls[-1]["function"]["arguments"] = arguments[: max(1, len(arguments) - 8)]  # cut inside the last value
            finish_reason = "length"
        completion_tokens = max(1, reply.usage_metadata["output_tokens"]) + self.reasoning_tokens
        usage: dict[str, Any] = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                                 "total_tokens": prompt_tokens + completion_tokens}
        if self.reasoning_tokens:
            usage["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        if self.cached_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": min(self.cached_tokens, prompt_tokens)}
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if self.reasoning:
            thought = " ".join(["Let me think about which tool answers this."] * max(1, self.reasoning_words // 9))
            if self.reasoning == "think":
                message["content"] = f"<think>\n{thought}\n</think>\n\n{content or ''}".rstrip() + ("\n" if not content else "")
            elif self.reasoning == "field":
                message["reasoning_content"] = thought
            elif self.reasoning == "only" and not calls:
                message["reasoning_content"] = f"{thought}\n{content or ''}"
                message["content"] = ""
        if calls:
            message["tool_calls"] = calls
        answer: dict[str, Any] = {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": 0,
                                  "model": self.model,
                                  "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}]}
        if self.usage == "zeros":
            answer["usage"] = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        elif self.usage == "fixed":  # a proxy's placeholder usage, the same whatever was sent
            answer["usage"] = {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}
        elif self.usage == "no_prompt":
            answer["usage"] = {**usage, "prompt_tokens": 0, "total_tokens": usage["completion_tokens"]}
        elif self.usage != "none":
            answer["usage"] = usage
        return answer

    def _call_id(self, call_id: str) -> str | None:
        return {"missing": None, "empty": ""}.get(self.tool_call_ids, call_id)

    def _arguments(self, arguments: dict) -> Any:
        if self.arguments == "object":
            return arguments
        if self.arguments == "double":
            return json.dumps(json.dumps(arguments))
        return json.dumps(arguments)

    def stream_events(self, completion: dict, include_usage: bool) -> Iterator[dict]:
        """The same completion as server-sent event chunks: role, text, tool calls in pieces, finish, usage."""
        choice = completion["choices"][0]
        message = choice["message"]

        def chunk(delta: dict, finish: str | None = None) -> dict:
            return {"id": completion["id"], "object": "chat.completion.chunk", "created": 0, "model": self.model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

        yield chunk({"role": "assistant", "content": ""})
        reasoning = message.get("reasoning_content") or ""
        for start in range(0, len(reasoning), 80):  # reasoning streams first, in pieces, as vLLM and DeepSeek send it
            yield chunk({"reasoning_content": reasoning[start : start + 80]})
        if message.get("content"):
            yield chunk({"content": message["content"]})
        for index, call in enumerate(message.get("tool_calls") or []):
            arguments = call["function"]["arguments"]
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            yield chunk({"tool_calls": [{"index": index, "id": call.get("id"), "type": "function",
                                         "function": {"name": call["function"]["name"], "arguments": arguments[:10]}}]})
            if arguments[10:]:
                yield chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments[10:]}}]})
        yield chunk({}, choice["finish_reason"])
        if include_usage and "usage" in completion:
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
                extra = server.headers.get(number, {})
                if status == 200 and body.get("stream") and isinstance(payload, dict) and payload.get("choices"):
                    include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                    self._send_events(server.stream_events(payload, include_usage), trickle=number in server.trickle)
                else:
                    self._send(status, payload, extra, trickle=number in server.trickle)

            def _send(self, status: int, payload: Any, extra: dict | None = None, trickle: bool = False) -> None:
                html = isinstance(payload, str)
                data = payload.encode() if html else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8" if html else "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (extra or {}).items():
                    self.send_header(name, str(value))
                self.end_headers()
                if not trickle:
                    self.wfile.write(data)
                    return
                for start in range(0, len(data), 8):  # a few bytes at a time: every read is quick, the whole is slow
                    if server._release.is_set():
                        return
                    self.wfile.write(data[start : start + 8])
                    self.wfile.flush()
                    time.sleep(server.trickle_interval)

            def _send_events(self, events: Iterator[dict], trickle: bool = False) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for event in events:
                    for _ in range(10 if trickle else 0):  # keep-alive comments, slowly: every read is quick
                        if server._release.is_set():
                            return
                        self.wfile.write(b": keep-alive\n\n")
                        self.wfile.flush()
                        time.sleep(server.trickle_interval)
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        return Handler


def strict_refusal(messages: list[dict]) -> str | None:
    """What a strict endpoint (OpenAI's) says about an assistant tool call without an id, or a result that answers none."""
    asked: set[str] = set()
    for index, message in enumerate(messages):
        for number, call in enumerate(message.get("tool_calls") or []):
            if not call.get("id"):
                return f"Invalid 'messages[{index}].tool_calls[{number}].id': empty string. Expected a string with minimum length 1."
            asked.add(call["id"])
        if message.get("role") == "tool" and message.get("tool_call_id") not in asked:
            return (f"Invalid parameter: messages with role 'tool' must be a response to a preceding message with "
                    f"'tool_calls' (messages[{index}].tool_call_id {message.get('tool_call_id')!r}).")
    return None


HTML_PAGE = ("<!DOCTYPE html>\n<html><head><title>Open WebUI</title></head><body><div id=\"app\">Loading...</div>"
             "<script src=\"/static/app.js\"></script></body></html>\n")
"""What a web UI answers at a base URL that is not its API."""

GEMINI_OVERFLOW = [{"error": {"code": 400, "message": "The input token count (1250231) exceeds the maximum number of "
                                                      "tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}]
"""Gemini's OpenAI-compatible layer answers an overflow with a JSON *list* holding the error."""


# --- the client side, as the tests drive it ----------------------------------------------------------

def agent_on(server: ImitationServer, tmp_path: Any, version: str = "v2", model_name: str | None = None,
             **model_options: Any) -> Any:
    """An agent of ``version`` on ``server``'s model (no retries, a 10 s timeout, unless given), in a fresh workspace."""
    from flawedcode.agents import make_agent
    from flawedcode.models import get_model
    from flawedcode.tools import Workspace

    model = get_model(f"openai:{model_name or server.model}", base_url=server.base_url,
                      max_retries=model_options.pop("max_retries", 0),
                      timeout_seconds=model_options.pop("timeout_seconds", 10), **model_options)
    ws = Workspace.create(tmp_path / f"ws-{version}", tmp_path / "scratch", tmp_path / "archives")
    return make_agent(version, model=model, workspace=ws)


def send_all(agent: Any, steps: Any) -> tuple[list[str], list[str]]:
    """Each step's reply (``""`` for a failed turn), and the failed turns' one-line errors."""
    from flawedcode.agents import AgentError

    replies, failures = [], []
    for step in steps:
        try:
            replies.append(agent.send(step))
        except AgentError as error:
            failures.append(str(error))
            replies.append("")
    return replies, failures


def run_chat(monkeypatch: Any, capsys: Any, stdin: str, *args: str) -> tuple[int, str, str]:
    """``flawedcode chat ARGS`` reading ``stdin``: its exit code, stdout and stderr."""
    import io
    import sys

    from flawedcode import cli

    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = cli.main(["chat", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@contextmanager
def imitation(**settings: Any) -> Iterator[ImitationServer]:
    """``with imitation(style="vllm", window=4096, publish_window=True) as server: ...``"""
    with ImitationServer(**settings) as server:
        yield server
