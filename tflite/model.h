/*
 * model.h - a TensorFlow Lite segmentation model as an op graph.
 *
 * model_load() parses the tflite flatbuffer in plain C (no TensorFlow): every
 * offset, vector length and buffer range is checked against the file, so a
 * truncated, corrupt or hostile file is an error, never a crash. Constant
 * weights stored as float16 behind DEQUANTIZE ops are converted to float32
 * at load time and the DEQUANTIZE ops disappear from the graph; constant
 * int32 tensors (RESIZE_BILINEAR's size) are read into op fields. What is
 * left is a list of ops in execution order over float32 NHWC activations.
 *
 * Supported ops: CONV_2D, DEPTHWISE_CONV_2D, HARD_SWISH, RELU, LOGISTIC,
 * AVERAGE_POOL_2D, MEAN (over H and W), MUL, ADD (with [1,1,1,C] broadcast of
 * the second input), RESIZE_BILINEAR, and mediapipe's custom
 * Convolution2DTransposeBias. Anything else is an error naming the op.
 *
 * The pose tier's models (MediaPipe Pose: pose_detection, pose_landmark_*)
 * add PAD (zeros), DEPTH_TO_SPACE, MAX_POOL_2D, RESHAPE and CONCATENATION
 * (activations of rank 2 or 3 appear around the last two), several graph
 * outputs, and DENSIFY: a sparse constant (all dimensions dense but the
 * last, which is CSR) made dense at load time like DEQUANTIZE. The CPU
 * engine runs them (net.h: net_create_outputs); the GPU's runs them too
 * (net_cuda.h: netcu_create_outputs), equal to the CPU's within 2e-4 of
 * each output's scale (g_net_pose).
 */
#ifndef VR_MODEL_H
#define VR_MODEL_H

#include "vr_err.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Limits checked before anything read from the file is used. */
#define MODEL_MAX_FILE    (64u << 20)
#define MODEL_MAX_TENSORS 4096
#define MODEL_MAX_OPS     4096
#define MODEL_MAX_DIM     16384
#define MODEL_MAX_OUTPUTS 8

enum model_op_kind {
    MOP_CONV_2D,
    MOP_DEPTHWISE_CONV_2D,
    MOP_HARD_SWISH,
    MOP_RELU,
    MOP_LOGISTIC,
    MOP_AVERAGE_POOL_2D,
    MOP_MEAN,
    MOP_MUL,
    MOP_ADD,
    MOP_RESIZE_BILINEAR,
    MOP_TRANSPOSE_CONV_BIAS, /* mediapipe Convolution2DTransposeBias */
    MOP_PAD,                 /* zeros around H, W, C (pose models) */
    MOP_DEPTH_TO_SPACE,
    MOP_MAX_POOL_2D,
    MOP_RESHAPE,             /* same values, new shape */
    MOP_CONCATENATION,       /* 2 or 3 inputs along one axis */
    MOP_COUNT
};

enum model_padding { MPAD_SAME = 0, MPAD_VALID = 1 };

/* Fused activation, as tflite's ActivationFunctionType. */
enum model_act { MACT_NONE = 0, MACT_RELU = 1, MACT_RELU_N1_TO_1 = 2,
                 MACT_RELU6 = 3, MACT_TANH = 4 };

/* A tensor. Activations have data == NULL; constants own float32 data. */
struct model_tensor {
    char name[96];
    int rank;       /* 0..4 */
    int shape[4];   /* as in the file; activations are NHWC with N == 1 */
    float *data;    /* constant values (float32), or NULL */
    size_t count;   /* number of elements (product of shape) */
};

struct model_op {
    enum model_op_kind kind;
    int in[3];      /* tensor indices; -1 where absent. conv: input, weights, bias */
    int n_in;
    int out;        /* tensor index */
    /* CONV_2D, DEPTHWISE_CONV_2D, AVERAGE_POOL_2D, TRANSPOSE_CONV_BIAS */
    enum model_padding padding;
    int stride_h, stride_w;
    int dilation_h, dilation_w;  /* 1 when absent */
    int depth_multiplier;        /* DEPTHWISE_CONV_2D */
    int filter_h, filter_w;      /* AVERAGE_POOL_2D, MAX_POOL_2D */
    enum model_act act;          /* fused activation (conv, pool, add, mul) */
    /* RESIZE_BILINEAR */
    int align_corners, half_pixel_centers;
    int out_h, out_w;            /* RESIZE_BILINEAR target size */
    /* MEAN */
    int keep_dims;
    /* PAD: zeros before/after along H, W and C */
    int pad_h0, pad_h1, pad_w0, pad_w1, pad_c0, pad_c1;
    int block_size;              /* DEPTH_TO_SPACE */
    int axis;                    /* CONCATENATION, as an NHWC axis: 1 H, 2 W, 3 C
                                  * (a [1,A,B] tensor is [1,1,A,B]) */
};

struct model {
    struct model_tensor *tensors;
    int n_tensors;
    struct model_op *ops;       /* in execution order */
    int n_ops;
    int input, output;          /* tensor indices of the graph's input/output */
    int outputs[MODEL_MAX_OUTPUTS]; /* every graph output, in file order; */
    int n_outputs;              /* output == outputs[0] */
    int in_h, in_w, in_c;       /* input size (the model's tile size) */
    int out_c;                  /* output channels (1 for selfie segmentation) */
    char hash[17];              /* 64-bit FNV-1a of the file, hex: tuning key */
};

/* Loads a model from a file. On success *out owns everything and returns 0;
 * on failure returns a negative VR_E* code, *out stays NULL and `err` says
 * what is wrong and where ("models/x.tflite: tensor 12: buffer 40 out of
 * range"). */
int model_load(const char *path, struct model **out, vr_err *err);

/* Same from memory; `buf` is only read during the call (the model copies what
 * it keeps). `name` is used in error messages. */
int model_load_mem(const uint8_t *buf, size_t len, const char *name,
                   struct model **out, vr_err *err);

/* Frees the model and clears *m; accepts NULL and a half-built model. */
void model_free(struct model **m);

/* "CONV_2D", ... (static storage). */
const char *model_op_name(enum model_op_kind k);

#ifdef __cplusplus
}
#endif

#endif
