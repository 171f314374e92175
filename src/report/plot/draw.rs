//! The back end of every plot: an SVG canvas drawn with plotters, the
//! shared axes, legend, palette and tick labels, and the PNG rasterised from
//! that same SVG by resvg with the bundled DejaVu Sans
//! (`assets/DejaVuSans.ttf`, Bitstream Vera licence), so both formats show
//! one picture and nothing depends on fontconfig or system fonts.

use std::sync::{Arc, OnceLock};

use plotters::chart::MeshStyle;
use plotters::coord::{CoordTranslate, Shift};
use plotters::prelude::*;
use resvg::{tiny_skia, usvg};

use crate::error::{Error, Result};

use super::Plot;

/// DejaVu Sans, the font PNGs are drawn with (licence: assets/DejaVuSans-LICENSE.txt).
pub(super) static FONT: &[u8] = include_bytes!("../../../assets/DejaVuSans.ttf");

/// PNG pixels per SVG pixel (sharp text on high-density screens and in print).
pub(super) const PNG_SCALE: f32 = 2.0;

pub(super) const SANS: &str = "sans-serif";

// Requested sizes; plotters' SVG backend writes about 0.8 of them.
pub(super) const TITLE_PX: u32 = 24;

pub(super) const LABEL_PX: u32 = 16;

pub(super) const DESC_PX: u32 = 18;

/// Tableau 10: distinguishable, and readable in grey print.
pub(super) const PALETTE: [RGBColor; 10] = [
    RGBColor(0x4e, 0x79, 0xa7),
    RGBColor(0xf2, 0x8e, 0x2b),
    RGBColor(0xe1, 0x57, 0x59),
    RGBColor(0x76, 0xb7, 0xb2),
    RGBColor(0x59, 0xa1, 0x4f),
    RGBColor(0xed, 0xc9, 0x48),
    RGBColor(0xb0, 0x7a, 0xa1),
    RGBColor(0xff, 0x9d, 0xa7),
    RGBColor(0x9c, 0x75, 0x5f),
    RGBColor(0xba, 0xb0, 0xac),
];

pub(super) fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

pub(super) type Drawn = std::result::Result<(), Box<dyn std::error::Error>>;

/// Draws on a white SVG canvas of `size` pixels and returns the SVG text.
pub(super) fn draw_svg(
    name: &str,
    size: (u32, u32),
    draw: impl FnOnce(&Area<'_>) -> Drawn,
) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let drawn = root
            .fill(&WHITE)
            .map_err(Box::from)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(Box::from));
        drawn.map_err(|e| Error::Plot {
            what: name.into(),
            message: e.to_string(),
        })?;
    }
    Ok(svg)
}

/// The mesh of every plot: faint major grid lines only, tick labels of
/// `label_px` and axis descriptions of `desc_px`.
pub(super) fn mesh<'m, 'a, 'b, 'c, X: Ranged, Y: Ranged>(
    style: &'m mut MeshStyle<'a, 'b, X, Y, SVGBackend<'c>>,
    label_px: u32,
    desc_px: u32,
) -> &'m mut MeshStyle<'a, 'b, X, Y, SVGBackend<'c>> {
    style
        .label_style((SANS, label_px))
        .axis_desc_style((SANS, desc_px))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
}

/// The legend of the labelled series, at `position`, in `font_px` text.
pub(super) fn legend<'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
    font_px: u32,
) -> Drawn {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK.mix(0.3))
        .label_font((SANS, font_px))
        .draw()?;
    Ok(())
}

/// Extends `lo..hi` by `frac` of its width on both sides (or ±1 when empty),
/// never below zero when `lo` is not. A range that is not finite, or whose
/// padded width is not (±1e308), is `0..1`: plotters' tick search never ends
/// on an infinite width.
pub(super) fn padded(lo: f64, hi: f64, frac: f64) -> std::ops::Range<f64> {
    let width = if hi > lo { hi - lo } else { hi.abs().max(1.0) };
    let low = lo - width * frac;
    let low = if lo >= 0.0 { low.max(0.0) } else { low };
    let high = hi + width * frac;
    if !(high - low).is_finite() {
        return 0.0..1.0;
    }
    low..high
}

/// Tick labels: about three significant digits, no trailing zeros.
pub(super) fn tick(v: f64) -> String {
    let text = format!("{:.*}", crate::report::decimals_for(v).saturating_sub(1), v);
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        &text
    };
    // A tick a rounding error below zero.
    if text == "-0" { "0" } else { text }.to_string()
}

/// The bundled font, loaded once.
pub(super) fn font_db() -> Arc<usvg::fontdb::Database> {
    static DB: OnceLock<Arc<usvg::fontdb::Database>> = OnceLock::new();
    DB.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(FONT.to_vec());
        db.set_sans_serif_family("DejaVu Sans");
        Arc::new(db)
    })
    .clone()
}

/// The PNG image of `plot`'s SVG, at twice its pixel size, with the bundled font.
pub fn png(plot: &Plot) -> Result<Vec<u8>> {
    let fail = |message: String| Error::Plot {
        what: plot.name.clone(),
        message,
    };
    let options = usvg::Options {
        fontdb: font_db(),
        font_family: "DejaVu Sans".into(),
        ..Default::default()
    };
    let tree = usvg::Tree::from_str(&plot.svg, &options).map_err(|e| fail(e.to_string()))?;
    let size = tree
        .size()
        .to_int_size()
        .scale_by(PNG_SCALE)
        .ok_or_else(|| fail("the image is empty".into()))?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).ok_or_else(|| {
        fail(format!(
            "no {}×{} image can be allocated",
            size.width(),
            size.height()
        ))
    })?;
    pixmap.fill(tiny_skia::Color::WHITE);
    resvg::render(
        &tree,
        tiny_skia::Transform::from_scale(PNG_SCALE, PNG_SCALE),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().map_err(|e| fail(e.to_string()))
}
