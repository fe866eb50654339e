/**
 * Opens archived documents the way their viewers would, for the tests: a PDF through MuPDF (its WASM build from the
 * npm package `mupdf`: every page is parsed, page 1 rendered to a PNG, the text extracted), so that no program from
 * the system is needed; a docx as an Office Open XML zip package (JSZip), returning the text of word/document.xml.
 */
import JSZip from 'jszip';
import * as mupdf from 'mupdf';

/** What {@link checkPdf} found in a PDF. */
export interface PdfCheck {
  pages: number;
  /** Page 1 rendered at 20 dpi, as PNG bytes. */
  firstPagePng: Uint8Array;
  /** The text of every page, pages separated by a form feed. */
  text: string;
}

/**
 * Opens a PDF with MuPDF, renders page 1 (a PNG must come out) and extracts the text of every page.
 * @returns the text of the PDF (pages separated by a form feed), as a viewer's text extraction gives it
 * @throws when it is not a PDF or MuPDF cannot render it
 */
export async function checkPdf(content: Buffer): Promise<string> {
  return (await openPdf(content)).text;
}

/**
 * Opens a PDF with MuPDF: page count, page 1 rendered to PNG, text.
 * @throws when it is not a PDF or MuPDF cannot open or render it
 */
export async function openPdf(content: Buffer): Promise<PdfCheck> {
  if (!content.subarray(0, 5).equals(Buffer.from('%PDF-'))) throw new Error('not a PDF');
  const doc = mupdf.Document.openDocument(content, 'application/pdf');
  try {
    const pages = doc.countPages();
    if (pages < 1) throw new Error('the PDF has no pages');
    const texts: string[] = [];
    let firstPagePng: Uint8Array | undefined;
    for (let k = 0; k < pages; k++) {
      const page = doc.loadPage(k);
      if (k === 0) {
        const pixmap = page.toPixmap(mupdf.Matrix.scale(20 / 72, 20 / 72), mupdf.ColorSpace.DeviceRGB, false, true);
        firstPagePng = pixmap.asPNG();
        pixmap.destroy();
      }
      const text = page.toStructuredText('preserve-whitespace');
      texts.push(text.asText());
      text.destroy();
      page.destroy();
    }
    if (!firstPagePng || firstPagePng.length < 8) throw new Error('MuPDF rendered no image of page 1');
    return { pages, firstPagePng, text: texts.join('\f') };
  } finally {
    doc.destroy();
  }
}

/**
 * Opens a docx as a zip package: [Content_Types].xml, _rels/.rels and word/document.xml must be there.
 * @returns the text runs of word/document.xml, joined by spaces
 */
export async function checkDocx(content: Buffer): Promise<string> {
  const zip = await JSZip.loadAsync(content);
  for (const part of ['[Content_Types].xml', '_rels/.rels', 'word/document.xml']) {
    if (!zip.file(part)) throw new Error(`docx package lacks ${part}`);
  }
  const types = await zip.file('[Content_Types].xml')!.async('string');
  if (!types.includes('wordprocessingml.document.main+xml'))
    throw new Error('[Content_Types].xml does not declare a Word document');
  const xml = await zip.file('word/document.xml')!.async('string');
  return [...xml.matchAll(/<w:t(?: [^>]*)?>([^<]*)<\/w:t>/g)]
    .map((m) => m[1])
    .join(' ')
    .replaceAll('&amp;', '&')
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"');
}
