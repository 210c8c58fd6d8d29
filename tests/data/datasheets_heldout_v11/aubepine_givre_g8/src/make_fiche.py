"""Render givre-g8-fiche-technique.pdf (the Givre G8 bilingual spec sheet) with matplotlib's PdfPages.

Run from this folder: ``python make_fiche.py`` writes ``../givre-g8-fiche-technique.pdf``. TrueType (Type 42)
fonts keep a text layer that pypdf extracts; the scorer reads only the PDF, never this script.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.backends.backend_pdf import PdfPages  # noqa: E402

plt.rcParams["pdf.fonttype"] = 42
plt.rcParams["font.family"] = "DejaVu Sans"

OUT = Path(__file__).resolve().parents[1] / "givre-g8-fiche-technique.pdf"

INTRO = [
    "Le Givre G8 est l'accélérateur d'inférence et d'entraînement d'Aubépine Systèmes pour serveurs OAM.",
    "The Givre G8 is Aubépine Systèmes' inference and training accelerator for OAM servers.",
    "La grappe de calcul (compute cluster) est l'unité de calcul du G8 : chaque grappe regroupe",
    "quatre ordonnanceurs de faisceaux, un moteur matriciel et la mémoire partagée de grappe.",
    "Each compute cluster holds four beam schedulers, one matrix engine and the cluster shared store.",
    "Un faisceau (beam) est le groupe de voies exécuté en lock-step, l'équivalent d'un warp.",
]

SECTIONS = [
    ("Architecture / Architecture", [
        ("Grappes de calcul / Compute clusters", "72 (2 demi-puces × 36 / 2 half-dies × 36)"),
        ("Largeur d'un faisceau / Beam width", "32 voies / lanes"),
        ("Voies FP32 par grappe / FP32 lanes per cluster", "128 (4 ordonnanceurs × 32)"),
        ("Threads par groupe de travail (max) / Threads per work-group", "1 024"),
        ("Threads résidents par grappe / Resident threads per cluster", "2 048"),
        ("Banc de registres par ordonnanceur / Register bank per beam scheduler", "64 Kio"),
    ]),
    ("Mémoire sur puce / On-chip memory", [
        ("Mémoire partagée par grappe / Cluster shared store", "192 Kio"),
        ("Mémoire partagée par groupe de travail (max) / per work-group", "160 Kio"),
        ("Cache L2 (toute la puce / whole chip)", "48 Mio (24 Mio par demi-puce)"),
    ]),
    ("Mémoire externe / Device memory", [
        ("Type", "HBM3E, 6 piles / stacks"),
        ("Capacité / Capacity", "144 Go (24 Go par pile)"),
        ("Bande passante / Bandwidth", "4,8 To/s (0,8 To/s par pile)"),
    ]),
    ("Horloges / Clocks", [
        ("Fréquence soutenue / Sustained clock", "1 650 MHz"),
        ("Fréquence de pointe / Boost clock", "2 100 MHz (non utilisée pour les crêtes)"),
    ]),
    ("Performances crête (dense) / Peak throughput (dense)", [
        ("FP32 vectoriel / vector", "30,4 TFLOPS"),
        ("BF16 matriciel / matrix", "486,6 TFLOPS (973,2 avec parcimonie / sparse)"),
        ("FP8 matriciel / matrix", "973,2 TFLOPS (1 946,4 avec parcimonie / sparse)"),
        ("INT8 matriciel / matrix", "973,2 TOPS"),
        ("FP64", "non pris en charge / not supported"),
    ]),
]

LEGEND = [
    "Unités / Units : Kio, Mio, Gio = KiB, MiB, GiB (binaires) ; Go = GB, To/s = TB/s (décimaux).",
    "Séparateur décimal : la virgule (4,8 To/s = 4.8 TB/s). Crêtes à la fréquence soutenue.",
]

CHART_NOTE = ("Comparaison / Comparison : Givre G6 (génération précédente : 48 grappes, 32 Mio de L2, 96 Go, "
              "1 500 MHz) et Nordlys NX-7 (concurrent, 132 unités).")


def main() -> None:
    with PdfPages(OUT) as pdf:
        fig = plt.figure(figsize=(8.27, 11.69))
        fig.text(0.06, 0.955, "Givre G8 — Fiche technique / Data sheet", fontsize=17, weight="bold")
        fig.text(0.06, 0.935, "Aubépine Systèmes SAS · Réf. AS-FT-G8 · révision C · novembre 2026", fontsize=8)
        y = 0.905
        for line in INTRO:
            fig.text(0.06, y, line, fontsize=7.5)
            y -= 0.015
        y -= 0.01
        for title, rows in SECTIONS:
            fig.text(0.06, y, title, fontsize=10, weight="bold")
            y -= 0.018
            for label, value in rows:
                fig.text(0.08, y, label, fontsize=7.5)
                fig.text(0.62, y, value, fontsize=7.5)
                y -= 0.0155
            y -= 0.008
        for line in LEGEND:
            fig.text(0.06, y, line, fontsize=7)
            y -= 0.014
        ax = fig.add_axes([0.12, 0.06, 0.35, 0.17])
        bars = ax.bar(["Givre G6", "Givre G8", "Nordlys NX-7"], [295.0, 486.6, 989.0], color=["#999", "#2a6", "#c64"])
        ax.bar_label(bars, labels=["295,0", "486,6", "989,0"], fontsize=7)
        ax.set_title("BF16 dense (TFLOPS)", fontsize=8)
        ax.tick_params(labelsize=6)
        ax2 = fig.add_axes([0.58, 0.06, 0.35, 0.17])
        bars2 = ax2.bar(["Givre G6", "Givre G8", "Nordlys NX-7"], [3.2, 4.8, 3.35], color=["#999", "#2a6", "#c64"])
        ax2.bar_label(bars2, labels=["3,2", "4,8", "3,35"], fontsize=7)
        ax2.set_title("Bande passante / Bandwidth (To/s)", fontsize=8)
        ax2.tick_params(labelsize=6)
        fig.text(0.06, 0.255, CHART_NOTE, fontsize=7)
        pdf.savefig(fig)
        plt.close(fig)


if __name__ == "__main__":
    main()
