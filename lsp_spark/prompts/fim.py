"""Raw fill-in-the-middle prompts for FIM-trained models behind `/v1/completions`."""

from __future__ import annotations

from dataclasses import dataclass

from lsp_spark.backends.base import CompletionRequest


@dataclass(frozen=True, slots=True)
class FimTemplate:
    prefix: str
    suffix: str
    middle: str
    stop: tuple[str, ...]
    file_header: str = ""

    def render(self, request: CompletionRequest) -> str:
        header = self.file_header.format(filename=request.filename) if request.filename else ""
        context = f"{request.context}\n" if request.context else ""
        return (
            f"{header}{self.prefix}{context}{request.prefix}"
            f"{self.suffix}{request.suffix}{self.middle}"
        )


FIM_TEMPLATES: dict[str, FimTemplate] = {
    "qwen": FimTemplate(
        "<|fim_prefix|>",
        "<|fim_suffix|>",
        "<|fim_middle|>",
        ("<|endoftext|>", "<|fim_pad|>", "<|file_sep|>", "<|im_end|>", "<|repo_name|>"),
        file_header="<|file_sep|>{filename}\n",
    ),
    "starcoder": FimTemplate(
        "<fim_prefix>",
        "<fim_suffix>",
        "<fim_middle>",
        ("<|endoftext|>", "<file_sep>", "<fim_prefix>"),
        file_header="<file_sep>{filename}\n",
    ),
    "codellama": FimTemplate("<PRE> ", " <SUF>", " <MID>", ("<EOT>", "</s>")),
    "deepseek": FimTemplate(
        "<｜fim▁begin｜>",
        "<｜fim▁hole｜>",
        "<｜fim▁end｜>",
        ("<｜end▁of▁sentence｜>", "<|EOT|>"),
    ),
}
