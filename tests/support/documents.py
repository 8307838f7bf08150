"""Document files made with the formats' own writers (fpdf2, python-docx, python-pptx,
openpyxl, odfpy, Pillow, the standard library), for the extraction tests and benchmark.
Nothing here is read from disk: every file is generated from its arguments."""

from __future__ import annotations

import datetime as dt
import io
import tarfile
import zipfile
from collections.abc import Sequence
from email.message import EmailMessage

__all__ = [
    "docx_file",
    "eml_file",
    "jpeg_with_exif",
    "ods_file",
    "odt_file",
    "pdf_file",
    "png_file",
    "pptx_file",
    "scanned_pdf_file",
    "tar_file",
    "xlsx_file",
    "zip_file",
]


def pdf_file(pages: Sequence[Sequence[str]], *, title: str | None = None) -> bytes:
    """A PDF with one page per item of ``pages``, each line a text line."""
    from fpdf import FPDF

    pdf = FPDF()
    if title:
        pdf.set_title(title)
    pdf.set_font("helvetica", size=11)
    for lines in pages:
        pdf.add_page()
        for line in lines:
            pdf.cell(0, 6, line, new_x="LMARGIN", new_y="NEXT")
    return bytes(pdf.output())


def png_file(width: int = 64, height: int = 32, color: str = "red") -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, format="PNG")
    return buffer.getvalue()


def scanned_pdf_file(pages: int = 1) -> bytes:
    """A PDF whose pages are only an image: no text layer, as a scanner makes them."""
    from fpdf import FPDF

    pdf = FPDF()
    for _ in range(pages):
        pdf.add_page()
        pdf.image(io.BytesIO(png_file(200, 100)), x=10, y=10, w=100)
    return bytes(pdf.output())


def docx_file(title: str, paragraphs: Sequence[str], table: Sequence[Sequence[str]] = ()) -> bytes:
    import docx

    document = docx.Document()
    document.core_properties.title = title
    document.core_properties.author = "Ada Lovelace"
    document.add_heading(title, level=1)
    for text in paragraphs:
        document.add_paragraph(text)
    if table:
        grid = document.add_table(rows=len(table), cols=len(table[0]))
        for r, row in enumerate(table):
            for c, value in enumerate(row):
                grid.cell(r, c).text = value
    document.add_heading("Second section", level=2)
    document.add_paragraph("The end.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def pptx_file(slides: Sequence[tuple[str, str, str]]) -> bytes:
    """One slide per (title, body, notes)."""
    import pptx

    presentation = pptx.Presentation()
    layout = presentation.slide_layouts[1]  # title and content
    for title, body, notes in slides:
        slide = presentation.slides.add_slide(layout)
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    buffer = io.BytesIO()
    presentation.save(buffer)
    return buffer.getvalue()


def xlsx_file(sheets: dict[str, Sequence[Sequence[object]]]) -> bytes:
    import openpyxl

    book = openpyxl.Workbook()
    for sheet in list(book.worksheets):  # the default empty sheet
        book.remove(sheet)
    for name, rows in sheets.items():
        sheet = book.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def ods_file(sheets: dict[str, Sequence[Sequence[str]]]) -> bytes:
    from odf.opendocument import OpenDocumentSpreadsheet
    from odf.table import Table, TableCell, TableRow
    from odf.text import P

    document = OpenDocumentSpreadsheet()
    for name, rows in sheets.items():
        table = Table(name=name)
        for row in rows:
            table_row = TableRow()
            for value in row:
                cell = TableCell(valuetype="string")
                cell.addElement(P(text=value))
                table_row.addElement(cell)
            table.addElement(table_row)
        document.spreadsheet.addElement(table)
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def odt_file(heading: str, paragraphs: Sequence[str]) -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.text import H, P

    document = OpenDocumentText()
    document.text.addElement(H(outlinelevel=1, text=heading))
    for text in paragraphs:
        document.text.addElement(P(text=text))
    buffer = io.BytesIO()
    document.write(buffer)
    return buffer.getvalue()


def zip_file(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def tar_file(members: dict[str, bytes], mode: str = "w:gz") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:  # type: ignore[call-overload]
        for name, content in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            archive.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def eml_file(
    subject: str,
    body: str,
    attachments: Sequence[tuple[str, str, bytes]] = (),
    *,
    html: str | None = None,
    forwarded: EmailMessage | None = None,
) -> bytes:
    message = EmailMessage()
    message["From"] = "Ada <ada@example.org>"
    message["To"] = "Alan <alan@example.org>"
    message["Subject"] = subject
    message["Date"] = "Mon, 01 Dec 2025 10:00:00 +0000"
    message["Message-ID"] = "<1@example.org>"
    message.set_content(body)
    if html is not None:
        message.add_alternative(html, subtype="html")
    for filename, mime, content in attachments:
        main, sub = mime.split("/", 1)
        message.add_attachment(content, maintype=main, subtype=sub, filename=filename)
    if forwarded is not None:
        message.add_attachment(forwarded)
    return message.as_bytes()


def jpeg_with_exif(
    *,
    make: str = "Canon",
    model: str = "EOS 5D",
    taken: dt.datetime = dt.datetime(2024, 5, 1, 10, 30, 0),
    latitude: tuple[float, float, float] = (48.0, 51.0, 29.6),
    north: bool = True,
    longitude: tuple[float, float, float] = (2.0, 17.0, 40.2),
    east: bool = True,
) -> bytes:
    """A small JPEG whose EXIF names the camera, the time and a GPS position."""
    from PIL import Image

    exif = Image.Exif()
    exif[271], exif[272] = make, model
    exif[306] = taken.strftime("%Y:%m:%d %H:%M:%S")
    exif.get_ifd(0x8769)[36867] = taken.strftime("%Y:%m:%d %H:%M:%S")
    gps = exif.get_ifd(0x8825)
    gps[1], gps[2] = ("N" if north else "S"), latitude
    gps[3], gps[4] = ("E" if east else "W"), longitude
    buffer = io.BytesIO()
    Image.new("RGB", (32, 16), "blue").save(buffer, format="JPEG", exif=exif)
    return buffer.getvalue()
