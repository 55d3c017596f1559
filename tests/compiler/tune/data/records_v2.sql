BEGIN TRANSACTION;
CREATE TABLE records (
    id           INTEGER PRIMARY KEY,
    workload     TEXT    NOT NULL,
    target       TEXT    NOT NULL,
    config       TEXT    NOT NULL,
    config_index INTEGER NOT NULL,
    costs        TEXT    NOT NULL,
    cost         REAL,
    error_no     INTEGER NOT NULL,
    error_class  TEXT    NOT NULL,
    error_msg    TEXT    NOT NULL DEFAULT '',
    all_cost     REAL    NOT NULL DEFAULT 0,
    measured_at  REAL    NOT NULL,
    stored_at    REAL    NOT NULL
);
INSERT INTO "records" VALUES(1,'["matmul",[64,64,64]]','llvm','{"tile_k": [1, 64], "tile_x": [4, 16], "tile_y": [8, 8]}',11,'[2.5e-05, 2.1e-05, 2.3e-05]',2.1e-05,0,'NO_ERROR','',0.4,1700000000.0,1.79554042943898367881e+09);
INSERT INTO "records" VALUES(2,'["matmul",[64,64,64]]','llvm','{"tile_k": [64, 1], "tile_x": [1, 64], "tile_y": [64, 1]}',3,'[9e-05]',9.0e-05,0,'NO_ERROR','',0.3,1700000001.0,1.79554042943898367881e+09);
INSERT INTO "records" VALUES(3,'["matmul",[64,64,64]]','llvm','{"tile_k": [2, 32], "tile_x": [2, 32], "tile_y": [2, 32]}',7,'[]',NULL,2,'COMPILE_ERROR','Traceback: CodegenError',0.2,1700000002.0,1.79554042943898367881e+09);
INSERT INTO "records" VALUES(4,'["conv2d_packed",[1,4,14,14,4,3,3,1,1]]','vta','{"tile_h": 7}',2,'[123456.0]',123456.0,0,'NO_ERROR','',1.5,1700000003.0,1.79554042943898367881e+09);
INSERT INTO "records" VALUES(5,'["conv2d_packed",[1,4,14,14,4,3,3,1,1]]','vta','{"tile_h": 14}',5,'[]',NULL,5,'TIMEOUT','run: deadline',120.0,1700000004.0,1.79554042943898367881e+09);
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO "schema_version" VALUES(2);
CREATE INDEX records_task ON records (workload, target);
CREATE UNIQUE INDEX records_once ON records (workload, target, config, measured_at);
COMMIT;
