"""PDF page rendering, behind one function (PyMuPDF, optional extra ``docs``).

Document tasks (MMLongBench-Doc) render pages to PIL images here and nowhere else, so the
backend can change without touching a task. PyMuPDF is imported on first use; when it is
missing the error says how to install it. A missing or unreadable file, or a page outside
the document, raises :class:`~harness.api.task.SampleError` naming the file, which the
evaluator reports (or counts and skips with ``--skip-bad-docs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.api.errors import MissingDependency
from harness.api.task import SampleError

__all__ = ["render_pages", "page_count", "INSTALL_HINT"]

INSTALL_HINT = "PDF rendering needs PyMuPDF: pip install 'headscope[docs]'"


def _pymupdf() -> Any:
    try:
        import pymupdf
    except ImportError:
        try:  # PyMuPDF < 1.24.3 only ships the legacy module name
            import fitz as pymupdf
        except ImportError:
            raise MissingDependency(INSTALL_HINT) from None
    return pymupdf


def _open(pdf_path: str | Path) -> Any:
    path = Path(pdf_path)
    if not path.is_file():
        raise SampleError(f"PDF file {str(path)!r} not found")
    pymupdf = _pymupdf()
    try:
        return pymupdf.open(str(path))
    except Exception as exc:  # noqa: BLE001 - MuPDF raises several types for corrupt files
        raise SampleError(f"PDF file {str(path)!r} cannot be read: {exc}") from exc


def page_count(pdf_path: str | Path) -> int:
    """Number of pages of a PDF.

    Raises:
        SampleError: missing or unreadable file.
        ImportError: PyMuPDF is not installed (with the install hint).
    """
    with _open(pdf_path) as doc:
        return doc.page_count


def render_pages(
    pdf_path: str | Path, pages: Sequence[int] | None = None, dpi: int = 144
) -> list[Any]:
    """Render pages of a PDF to RGB PIL images.

    Args:
        pdf_path: The PDF file.
        pages: 0-based page numbers in the order wanted; None renders every page.
        dpi: Resolution (72 dpi = 1 pixel per PDF point; 144 is MMLongBench-Doc's usual).

    Returns:
        One ``PIL.Image.Image`` per requested page, ``ceil(points × dpi / 72)`` pixels a side.

    Raises:
        SampleError: missing/unreadable file or a page outside the document (names the file).
        ImportError: PyMuPDF is not installed (with the install hint).
    """
    from PIL import Image

    if dpi <= 0:
        raise ValueError(f"dpi must be positive, got {dpi}")
    with _open(pdf_path) as doc:
        wanted = list(range(doc.page_count)) if pages is None else [int(p) for p in pages]
        bad = [p for p in wanted if not 0 <= p < doc.page_count]
        if bad:
            raise SampleError(
                f"PDF file {str(pdf_path)!r} has {doc.page_count} pages; "
                f"0-based page(s) {bad} do not exist"
            )
        out = []
        for number in wanted:
            _check_pixels(doc, number, dpi, pdf_path)
            try:
                pix = doc.load_page(number).get_pixmap(dpi=dpi, alpha=False)
            except Exception as exc:  # noqa: BLE001 - a broken page names the file and page
                raise SampleError(
                    f"PDF file {str(pdf_path)!r}: page {number} cannot be rendered: {exc}"
                ) from exc
            out.append(Image.frombytes("RGB", (pix.width, pix.height), pix.samples))
        return out


def _check_pixels(doc: Any, number: int, dpi: int, pdf_path: str | Path) -> None:
    """Refuse a page that would render to over 2 × ``Image.MAX_IMAGE_PIXELS`` pixels.

    That is PIL's limit for image files; a hostile page size must not exhaust memory.
    """
    import math

    from PIL import Image

    try:
        rect = doc.load_page(number).rect
    except Exception as exc:  # noqa: BLE001 - a broken page names the file and page
        raise SampleError(
            f"PDF file {str(pdf_path)!r}: page {number} cannot be read: {exc}"
        ) from None
    width, height = (math.ceil(abs(v) * dpi / 72) for v in (rect.width, rect.height))
    limit = 2 * (Image.MAX_IMAGE_PIXELS or math.inf)
    if width * height > limit:
        raise SampleError(
            f"PDF file {str(pdf_path)!r}: page {number} would render to {width}×{height} pixels "
            f"at {dpi} dpi, over the {limit:.0f}-pixel limit"
        )
