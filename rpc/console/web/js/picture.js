// Vectors that are pictures: a 784-dimensional vector is a 28 x 28 grey image (Fashion-MNIST,
// MNIST), drawn on a canvas scaled without smoothing.
import {h} from "./dom.js";

const SIDES = new Map([[784, 28]]);

export function isImageLike(dimension) { return SIDES.has(dimension); }

// A canvas showing `vector`, `size` CSS pixels wide; null when the vector is not image-like.
export function picture(vector, size = 56) {
  const side = SIDES.get(vector ? vector.length : 0);
  if (!side) return null;
  const canvas = h("canvas", {class: "picture", width: side, height: side});
  canvas.style.width = `${size}px`;
  canvas.style.height = `${size}px`;
  let lo = Infinity, hi = -Infinity;
  for (const v of vector) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
  const scale = hi > lo ? 255 / (hi - lo) : 0;
  const context = canvas.getContext("2d");
  const image = context.createImageData(side, side);
  for (let i = 0; i < side * side; i++) {
    const grey = Math.round((vector[i] - lo) * scale);
    image.data.set([grey, grey, grey, 255], i * 4);
  }
  context.putImageData(image, 0, 0);
  return canvas;
}
