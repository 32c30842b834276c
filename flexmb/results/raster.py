"""Shaded triangles drawn into an image with a depth buffer, for the shapes of an animation
(flexmb.results.animation; the shapes of flexmb.builder.shapes): matplotlib draws every triangle
as a path of its own (about 45 ms a frame for the UR5's 5340 triangles, their paths made and drawn,
and a depth sort that is wrong where meshes cut each other); this fills them in one compiled pass
(under 10 ms a frame, the projection included) with the nearest triangle at every pixel.
"""

from __future__ import annotations

import numba as nb
import numpy as np

__all__ = ["shade", "rasterize"]


def shade(corners: np.ndarray, light: np.ndarray) -> np.ndarray:
    """Grey level in [0.3, 0.92] of every triangle (corners (m, 3, 3)): two-sided Lambert shading,
    0.3 + 0.62 |n · light| with n the unit normal."""
    n = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-300)
    return 0.3 + 0.62 * np.abs(n @ light)


@nb.njit(cache=True, nogil=True)
def _fill(xy: np.ndarray, depth: np.ndarray, tris: np.ndarray, colour: np.ndarray, image: np.ndarray,
          zbuf: np.ndarray) -> None:  # pragma: no cover - compiled
    h, w = zbuf.shape
    for t in range(tris.shape[0]):
        a, b, c = tris[t, 0], tris[t, 1], tris[t, 2]
        x0, y0, x1, y1, x2, y2 = xy[a, 0], xy[a, 1], xy[b, 0], xy[b, 1], xy[c, 0], xy[c, 1]
        area = (x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)
        if abs(area) < 1e-12:
            continue
        lo_x = max(int(np.floor(min(x0, x1, x2))), 0)
        hi_x = min(int(np.ceil(max(x0, x1, x2))), w - 1)
        lo_y = max(int(np.floor(min(y0, y1, y2))), 0)
        hi_y = min(int(np.ceil(max(y0, y1, y2))), h - 1)
        for py in range(lo_y, hi_y + 1):
            fy = py + 0.5
            for px in range(lo_x, hi_x + 1):
                fx = px + 0.5
                w0 = ((x1 - fx) * (y2 - fy) - (x2 - fx) * (y1 - fy)) / area
                w1 = ((x2 - fx) * (y0 - fy) - (x0 - fx) * (y2 - fy)) / area
                w2 = 1.0 - w0 - w1
                if w0 >= 0.0 and w1 >= 0.0 and w2 >= 0.0:
                    z = w0 * depth[a] + w1 * depth[b] + w2 * depth[c]
                    if z < zbuf[py, px]:
                        zbuf[py, px] = z
                        for k in range(3):
                            image[py, px, k] = colour[t, k]
                        image[py, px, 3] = 255


def rasterize(xy: np.ndarray, depth: np.ndarray, tris: np.ndarray, grey: np.ndarray, image: np.ndarray,
              tint: tuple[float, float, float] = (1.0, 1.0, 1.08)) -> None:
    """Draw the triangles ``tris`` (m, 3) with corners at pixel positions ``xy`` (n, 2; x to the right,
    y down, pixel centres at +0.5) and ``depth`` (n; smaller: nearer) into ``image`` (height, width, 4)
    uint8 RGBA, in place: at every pixel a triangle covers, the nearest one's grey level ``grey`` (m)
    times ``tint``, opaque; other pixels are left as they are."""
    h, w = image.shape[:2]
    colour = np.clip(255.0 * np.asarray(grey, dtype=np.float64)[:, None] * np.asarray(tint), 0.0, 255.0).astype(np.uint8)
    _fill(np.ascontiguousarray(xy, dtype=np.float64), np.ascontiguousarray(depth, dtype=np.float64),
          np.ascontiguousarray(tris, dtype=np.int64), colour, image, np.full((h, w), np.inf))
