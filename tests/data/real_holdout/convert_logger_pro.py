"""Convert a Vernier Logger Pro export (1 reading/s, the volume typed at each addition, several runs side by
side) to one `volume_ml,ph,n_readings,temp_c` CSV per run: the volume column forward-filled from the typed
additions; the pH of a step is the median of its last 5 readings (the equilibrated end of the step), the
same conversion as ../../../../shared/fixtures/real_titrations/ (see its README).

    python convert_logger_pro.py RAW.csv OUT_PREFIX
"""
from __future__ import annotations

import csv
import statistics
import sys


def convert(raw: str, prefix: str) -> list[str]:
    with open(raw, encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    runs = len(header) // 4
    written = []
    for k in range(runs):
        steps: list[tuple[float, list[float], list[float]]] = []
        for row in body:
            cells = row[4 * k:4 * k + 4]
            if len(cells) < 4 or not cells[1].strip():
                continue
            if cells[3].strip():
                steps.append((float(cells[3]), [], []))
            if not steps:
                continue
            steps[-1][1].append(float(cells[1]))
            if cells[2].strip():
                steps[-1][2].append(float(cells[2]))
        out = f"{prefix}_run{k + 1}.csv"
        with open(out, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["volume_ml", "ph", "n_readings", "temp_c"])
            for volume, ph, temp in steps:
                if ph:
                    w.writerow([f"{volume:.4f}", f"{statistics.median(ph[-5:]):.4f}", len(ph),
                                f"{statistics.median(temp):.4f}" if temp else ""])
        written.append(out)
    return written


if __name__ == "__main__":
    print("\n".join(convert(sys.argv[1], sys.argv[2])))
