"""onnx_weight_bytes.py MODEL.onnx: prints the bytes of the model's weights (initializers and Constant
node payloads, all dtypes) as one integer; what an int8 artifact's size is measured against."""
import sys

import numpy as np
import onnx
from onnx import numpy_helper


def main():
    proto = onnx.load(sys.argv[1])
    tensors = list(proto.graph.initializer)
    tensors += [a.t for n in proto.graph.node if n.op_type == "Constant" for a in n.attribute if a.name == "value"]
    print(sum(int(np.asarray(numpy_helper.to_array(t)).nbytes) for t in tensors))


if __name__ == "__main__":
    main()
