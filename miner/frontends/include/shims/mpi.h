/* kernel-miner parse shim for MPI: declarations only, for libclang. */
#ifndef KM_MPI_H
#define KM_MPI_H
typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef struct { int MPI_SOURCE, MPI_TAG, MPI_ERROR; } MPI_Status;
#define MPI_COMM_WORLD ((MPI_Comm)0x44000000)
#define MPI_SUCCESS 0
#define MPI_BYTE ((MPI_Datatype)0x4c00010d)
#define MPI_CHAR ((MPI_Datatype)0x4c000101)
#define MPI_INT ((MPI_Datatype)0x4c000405)
#define MPI_FLOAT ((MPI_Datatype)0x4c00040a)
#define MPI_DOUBLE ((MPI_Datatype)0x4c00080b)
#define MPI_DATATYPE_NULL ((MPI_Datatype)0x0c000000)
#define MPI_SUM ((MPI_Op)0x58000003)
#define MPI_MAX ((MPI_Op)0x58000001)
#define MPI_IN_PLACE ((void *)-1)
#define MPI_MAX_ERROR_STRING 512
#define MPI_STATUS_IGNORE ((MPI_Status *)1)
extern "C" {
int MPI_Init(int *, char ***);
int MPI_Finalize(void);
int MPI_Comm_size(MPI_Comm, int *);
int MPI_Comm_rank(MPI_Comm, int *);
int MPI_Bcast(void *, int, MPI_Datatype, int, MPI_Comm);
int MPI_Allgather(const void *, int, MPI_Datatype, void *, int, MPI_Datatype, MPI_Comm);
int MPI_Allreduce(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
int MPI_Barrier(MPI_Comm);
int MPI_Error_string(int, char *, int *);
int MPI_Abort(MPI_Comm, int);
}
#endif
