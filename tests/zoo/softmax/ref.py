"""numpy reference for the softmax family: softmax over each row of x."""

import numpy as np


def softmax(inputs: dict[str, np.ndarray], args: dict) -> dict[str, np.ndarray]:
    cols = int(args["cols"])
    x = inputs["x"].astype(np.float64).reshape(-1, cols)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    y = e / e.sum(axis=1, keepdims=True)
    return {"y": y.astype(inputs["y"].dtype).reshape(inputs["y"].shape)}
